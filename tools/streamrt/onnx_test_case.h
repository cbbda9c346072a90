// One ONNX backend-test case (model.onnx + test_data_set_*/{input,output}_N.pb): build,
// run every data set, compare with the reference outputs.
#pragma once

#include <string>
#include <vector>

#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::cli {

enum class CaseOutcome { kPass, kFail, kSkip };

struct CaseResult {
  CaseOutcome outcome = CaseOutcome::kFail;
  std::string message;  // why it failed / was skipped; error figures on a mismatch
};

struct CompareTolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

// How every case is built and run: `precision` float32 keeps the model's types; float16 /
// bfloat16 as the builder's --fp16 / --bf16. `against_cpu` compares with the CPU backend built the
// same way instead of the stored outputs (the op conformance check of a device against the CPU
// reference, in any precision). `passes` and `runtime` (its device aside) as --no-fusion ... and
// --attention-kernel ... give them.
struct CaseSetup {
  DeviceType device = DeviceType::kCpu;
  DataType precision = DataType::kFloat32;
  bool against_cpu = false;
  BuilderPasses passes;
  RuntimeOptions runtime;
};

// Case folders under `path` (itself if it holds model.onnx), sorted.
std::vector<std::string> find_cases(const std::string& path);

// Runs the case in this process (the caller isolates it in a child process).
// A model with random ops (OpSchema::nondeterministic) has its outputs checked for dtype, dims and
// what every draw satisfies, not value by value (unless `against_cpu` and every random node is
// seeded), and passes with a note that says so.
CaseResult run_case(const std::string& dir, const CaseSetup& setup, const CompareTolerance& tol);

}  // namespace streamrt::cli
