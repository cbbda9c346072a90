// The builder in two halves, for callers that need the optimized graph between them (the engine
// cache keys it, refit takes weights from it):
//   prepare_graph: shapes/profiles applied, shape inference, constant folding, identity and dead
//                  code removal, fusions, reduced precision, graph outputs materialized: the graph
//                  whose constants are, by name, exactly the plan's weights;
//   finish_plan:   lowering (steps, value table, memory plan), device info, streamable weights,
//                  weight stripping.
// build_plan_from_onnx == import + prepare_graph + finish_plan.
#pragma once

#include <string>
#include <unordered_map>

#include "builder/lowering.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

struct PreparedGraph {
  ir::Graph graph;
  std::unordered_map<ir::ValueId, InputProfile> profiles;
  plan::DeviceInfo device;  // the target, as the backend describes it
};

// Optimizes an imported graph for `config`. `source` (the model's path or another label) names
// the engine when neither the config nor the graph does, and prefixes shape errors.
Result<PreparedGraph> prepare_graph(ir::Graph g, const std::string& source, const BuilderConfig& config,
                                    BuildReport* report);

// Lowers a prepared graph (consumed) into a plan.
Result<plan::PlanData> finish_plan(PreparedGraph& prepared, const BuilderConfig& config, BuildReport* report);

}  // namespace streamrt::builder
