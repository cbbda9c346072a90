// Internal state of a loaded engine, shared read-only by its execution contexts.
#pragma once

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "ops/op.h"
#include "plan/plan.h"
#include "streamrt/runtime.h"

namespace streamrt {

struct EngineState {
  plan::LoadedPlan plan;
  DeviceType device = DeviceType::kCpu;
  // The loading runtime's options (its diagnostics reach every context of the engine).
  RuntimeOptions options;
  std::vector<const ops::OpSchema*> schemas;  // per step
  std::unordered_map<std::string, int32_t> io_index;  // name -> index into plan.data.values
  // The step list as an ir::Graph (weights as constants), for shape-only passes.
  ir::Graph graph;
  // Per-engine state of the device backend (uploaded weights, ...).
  std::shared_ptr<void> device_state;
  // Weight streaming: bytes of streamable weights and the budget in force.
  uint64_t streamable_bytes = 0;
  uint64_t budget = 0;
  uint64_t scratch_bytes = 0;  // per context, at `budget` (set when a budget is applied)
  // An engine for timing only (the builder's step timing): streamed weights are never copied nor
  // read from the plan (each streamed step reads its zeroed ring slot as it is), so its runs time
  // compute alone and no host copy of the weights is made.
  bool placeholder_streamed_weights = false;
  std::atomic<size_t> live_contexts{0};
  std::mutex mutex;  // guards budget changes against context creation
};

}  // namespace streamrt
