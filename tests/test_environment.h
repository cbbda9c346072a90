// The environment variables the test binaries honour, as the CLI does (the library reads none):
// STREAMRT_LOG (e.g. verbose, to see why a test failed) and STREAMRT_NO_SIMD (ctest's
// half_gemm_portable_loops runs the half-type GEMM tests on the portable loops). Each binary
// applies them once, before any test runs (tests/unit/test_environment.cc, tests/gpu/...).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "core/environment.h"
#include "ops/half_gemm.h"

namespace streamrt::testing {

inline bool apply_test_environment() {
  auto level = log_level_from_environment(std::getenv);
  if (!level.ok()) std::fprintf(stderr, "%s\n", level.status().to_string().c_str());
  else if (*level) set_log_level(**level);
  const bool no_simd = env_switch(std::getenv, "STREAMRT_NO_SIMD");
  if (no_simd) ops::set_cpu_simd(false);
  return true;
}

}  // namespace streamrt::testing
