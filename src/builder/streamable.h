// Streamable-weight selection (BuilderConfig::weight_streaming): which weights of a plan may
// live in host memory and stream to the device during a run.
#pragma once

#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

// Marks plan.weights[i].streamable for weights of at least `min_bytes` whose every
// consumer is a weight-heavy op reading them as a weight operand (MatMul A/B and fused bias, Gemm A/B/C, Conv W
// and B, Gather's data: embeddings). Adds the totals to `report` when given.
void mark_streamable_weights(plan::PlanData& plan, uint64_t min_bytes, BuildReport* report);

}  // namespace streamrt::builder
