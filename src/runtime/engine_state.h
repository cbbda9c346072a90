// Internal state of a loaded engine, shared read-only by its execution contexts.
#pragma once

#include <unordered_map>

#include "ops/op.h"
#include "plan/plan.h"
#include "streamrt/runtime.h"

namespace streamrt {

struct EngineState {
  plan::LoadedPlan plan;
  DeviceType device = DeviceType::kCpu;
  std::vector<const ops::OpSchema*> schemas;  // per step
  std::unordered_map<std::string, int32_t> io_index;  // name -> index into plan.data.values
  // The step list as an ir::Graph (weights as constants), for shape-only passes.
  ir::Graph graph;
};

}  // namespace streamrt
