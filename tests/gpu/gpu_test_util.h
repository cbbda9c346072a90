// GPU tests skip, with a message saying why, when no CUDA device answers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "streamrt/runtime.h"
#include "streamrt/tensor.h"

#define SRT_REQUIRE_GPU()                                                             \
  do {                                                                                \
    auto rt_probe_ = ::streamrt::Runtime::create({::streamrt::DeviceType::kCuda});    \
    if (!rt_probe_.ok()) GTEST_SKIP() << "no GPU: " << rt_probe_.status().to_string(); \
  } while (0)

namespace streamrt::testing {

// CUDA against the CPU: DESIGN.md's conformance tolerances per build precision.
struct Tolerance {
  double rtol, atol;
};
inline Tolerance tolerance(DataType t) {
  if (t == DataType::kFloat16) return {2e-3, 5e-3};
  if (t == DataType::kBFloat16) return {1.6e-2, 3e-2};
  return {1e-4, 1e-5};
}

// Every element of `got` within tol of `want`'s; a failure names how many differ and the first.
inline void expect_close(const Tensor& got, const Tensor& want, Tolerance tol, const std::string& what) {
  const auto a = got.to_float_vector().value(), b = want.to_float_vector().value();
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(double(a[i]) - b[i]) <= tol.atol + tol.rtol * std::fabs(b[i])) && bad++ == 0) first = i;
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << a.size() << " elements differ, first #" << first << ": "
                     << a[first] << " on CUDA, " << b[first] << " on the CPU";
}

}  // namespace streamrt::testing
