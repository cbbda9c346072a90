// Shared by the InstanceNormalization / GroupNormalization / MVN / LRN tests: deterministic
// inputs and element-wise comparison.
#pragma once

#include <cmath>
#include <random>

#include "shape_ops_test_util.h"

namespace streamrt::testing {

inline std::vector<float> norm_inputs(size_t n, uint32_t seed, float offset = 0.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng) + offset;
  return v;
}

inline void expect_all_near(const Tensor& got, const std::vector<double>& want, double tol) {
  const std::vector<float> g = values_f32(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << i;
}

// Mean and (population) variance of v[idx[k]].
inline void stats(const std::vector<float>& v, const std::vector<int64_t>& idx, double* mean, double* var) {
  double s = 0, q = 0;
  for (int64_t i : idx) s += v[static_cast<size_t>(i)];
  *mean = s / static_cast<double>(idx.size());
  for (int64_t i : idx) q += (v[static_cast<size_t>(i)] - *mean) * (v[static_cast<size_t>(i)] - *mean);
  *var = q / static_cast<double>(idx.size());
}

}  // namespace streamrt::testing
