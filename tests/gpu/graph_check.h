// A graph built for CUDA and for the CPU the same way, run on the same random inputs, outputs
// compared at the precision's tolerance (gpu_test_util.h). Shared by the GPU tests of single ops
// and fusions; the caller checks the CUDA plan's steps.
#pragma once

#include <string>
#include <vector>

#include "../unit/conv_test_util.h"
#include "../unit/tactics_test_util.h"
#include "gpu_test_util.h"

namespace streamrt::testing {

// The CUDA plan read back (empty steps when a build or run failed: the test has failed then).
inline plan::PlanData check_cuda_against_cpu(const ir::Graph& g, DataType precision, const std::string& what,
                                             uint32_t seed = 5) {
  auto cuda = build_graph_plan(g, DeviceType::kCuda, true, precision);
  auto cpu = build_graph_plan(g, DeviceType::kCpu, true, precision);
  EXPECT_TRUE(cuda.ok()) << what << ": " << cuda.status().to_string();
  EXPECT_TRUE(cpu.ok()) << what << ": " << cpu.status().to_string();
  if (!cuda.ok() || !cpu.ok()) return {};
  const auto in = block_inputs(g, seed);
  auto got = run_graph_plan(DeviceType::kCuda, *cuda, in);
  auto want = run_graph_plan(DeviceType::kCpu, *cpu, in);
  EXPECT_TRUE(got.ok()) << what << ": " << got.status().to_string();
  EXPECT_TRUE(want.ok()) << what << ": " << want.status().to_string();
  if (got.ok() && want.ok()) expect_close(*got, *want, tolerance(precision), what);
  return read_back(*cuda);
}

}  // namespace streamrt::testing
