// Residency planner for weight streaming: given a budget, decide which streamable weights stay
// in device memory (resident) and which stream in during each run, so that stalls are minimal.
//
// It simulates one run: steps in plan order, each with an estimated compute time; copies on
// one copy stream at the host-to-device bandwidth, into a ring of `slots` slots (a step's
// streamed weights share one slot; a slot is reused only after its consumer finished). Two
// candidate resident sets are scored by simulating both the largest shapes the profile allows
// and the smallest (a prefill and a one-token decode), each relative to its all-resident time:
//  - greedy: lazily, the weight that shortens the simulated run the most per byte, while it fits;
//  - interleaved: streamed weights spread evenly along the run (every k-th byte streams), so the
//    copy stream always has a free slot and resident compute in between to hide behind — what a
//    copy-bound run (decode) needs, where per-byte gains are all equal and greedy cannot tell.
// A backend that can split a weight (ResidencyInput::split; CUDA) also gets the budget that whole
// weights leave unused: a prefix of one streamed weight stays resident and is copied into the
// slot on the device, so only its remainder crosses the bus and a run streams total - budget
// bytes, not up to a whole weight more.
// Zero-copy weights (a backend's choice: tables that only Gathers read) never stream: outside the
// budget they are read in place (CUDA: from pinned host memory; CPU: from the plan file), so only
// the rows a run needs cross the bus or come in from the file. They take no slot and no copy
// time, and get what budget is left once the streamed weights are placed (largest first).
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"

namespace streamrt {

// Device memory is handed out in this granularity, so sizes are rounded to it everywhere.
inline constexpr uint64_t kStreamAlignment = 256;
inline uint64_t stream_align(uint64_t bytes) { return (bytes + kStreamAlignment - 1) / kStreamAlignment * kStreamAlignment; }

// What the planner assumes of the device (rough figures are enough: they only rank choices).
struct DeviceProfile {
  double flops_fp32 = 50e9;      // float32 FLOP/s
  double flops_half = 50e9;      // float16 / bfloat16 FLOP/s
  double memory_bandwidth = 10e9;  // bytes/s of the device's own memory
  double step_overhead_s = 2e-6;   // per step (launch)
  double stream_bandwidth = 5e9;   // bytes/s of a streamed copy (host -> device, or file -> memory)
  double copy_latency_s = 5e-6;    // per copy
};

// Estimated compute time of one step (FLOPs of MatMul/Gemm/Conv, bytes moved otherwise), from the
// values' planned (max) dims, or with `smallest` from their dims with every dynamic dim at 1
// (e.g. one token of a decoder whose profile allows 2048), or with `dims` from those (per plan
// value; a decode build's one-token run: residency_input).
double estimate_step_seconds(const plan::PlanData& plan, size_t step, const DeviceProfile& device,
                             bool smallest = false, const std::vector<Dims>* dims = nullptr);

struct ResidencyInput {
  std::vector<double> step_seconds;               // per plan step, at the profile's max shapes
  std::vector<double> step_seconds_small;         // per plan step, dynamic dims at 1 (may be empty)
  std::vector<std::vector<int32_t>> step_weights;  // per plan step: streamable weights it reads
  std::vector<uint64_t> weight_bytes;             // per plan weight (bytes, counted against the budget)
  std::vector<uint8_t> zero_copy;                 // per plan weight: read in place when not resident (may be empty)
  DeviceProfile device;
  int slots = 3;
  bool split = false;  // the backend can keep a prefix of one streamed weight resident
};

// Builds the planner's input for `plan`: steps that run on the device (`device_step`, all when
// empty) and the streamable weights each reads; step times are the plan's measured ones
// at the max shapes (PlanData::step_ms, recorded by the builder on the GPU) where it has them,
// else estimate_step_seconds(). The one-token times are estimates, scaled to sum to the plan's
// measured graph-replayed run at the min shapes (PlanData::min_run_ms) where it has one: timed per
// step, a token's tiny steps measure launch gaps of eager runs that a graph replay does not have,
// and those made the planner choose a worse one-token plan at 90 % (1.039x vs 1.010x the bound
// replayed on H100 times); unscaled, the estimates were a third low, and the planner kept the
// early weights resident, so the copy stream waited for compute to reach the streamed ones.
// A decode build (a KV cache stored in place, BuilderConfig::kv_cache_in_place) estimates its
// one-token run at the profile's opt shapes instead (one new token after a long cache: the step
// timing measured min_run_ms there too).
ResidencyInput residency_input(const plan::PlanData& plan, const DeviceProfile& device,
                               const std::vector<uint8_t>& device_step = {});

// Streamable weights that the steps in `device_step` (all when empty) read only as a table
// (OpSchema::table_inputs: Gather's input 0): a backend can read them in place, a run touching
// only the rows it gathers. The ResidencyInput::zero_copy of CUDA (tables in pinned host
// memory) and of the CPU (in the file).
std::vector<uint8_t> gather_table_weights(const plan::PlanData& plan, const std::vector<uint8_t>& device_step = {});

struct ResidencyPlan {
  std::vector<uint8_t> resident;  // per plan weight: 1 = kept in device memory (streamable ones)
  uint64_t resident_bytes = 0;    // streamable bytes kept resident (prefixes included), <= budget
  uint64_t streamed_bytes = 0;    // bytes copied per run from host memory
  std::vector<uint64_t> resident_prefix;  // per plan weight: leading bytes of a streamed weight kept resident
  std::vector<uint8_t> read_in_place;  // per plan weight: 1 = zero-copy and not resident (never streamed)
  uint64_t zero_copy_bytes = 0;   // streamable bytes read in place from host memory (not copied)
  uint64_t slot_bytes = 0;        // largest per-step streamed bytes, each weight aligned: one ring slot
  double estimated_seconds = 0;   // simulated run time
};

// Plans residency for `budget` bytes of streamable weights.
ResidencyPlan plan_residency(const ResidencyInput& in, uint64_t budget);

// Simulated run time with the given resident set (exposed for tests and benchmarks), with the
// max-shape estimates or, with `small`, the smallest-shape ones.
double simulate_run(const ResidencyInput& in, const std::vector<uint8_t>& resident, bool small = false);
// The same for a plan, counting its resident prefixes.
double simulate_plan(const ResidencyInput& in, const ResidencyPlan& plan, bool small = false);

}  // namespace streamrt
