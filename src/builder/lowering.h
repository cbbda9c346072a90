// Lowering an optimized ir::Graph into plan::PlanData: step list, value table, weights,
// I/O with their profiles, and the activation memory plan sized for the profile's max.
#pragma once

#include <unordered_map>

#include "ir/graph.h"
#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

struct InputProfile {
  Dims min, opt, max;
};

// Graph outputs that no node produces (constants after folding, or outputs listed twice) get an
// Identity step so every output is written by a step. Idempotent; lower_to_plan runs it.
Status materialize_outputs(ir::Graph& g);

Result<plan::PlanData> lower_to_plan(ir::Graph& g,
                                     const std::unordered_map<ir::ValueId, InputProfile>& profiles,
                                     const BuilderConfig& config, BuildReport* report);

}  // namespace streamrt::builder
