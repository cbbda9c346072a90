// Step timing: a weight-streaming build on a device that can time its steps (CUDA) runs the
// finished plan there at the profile's max shapes and records each step's measured time in the
// plan (PlanData::step_ms). The residency planner uses them instead of its FLOP / byte estimates,
// which are off by 3-5x for attention and element-wise steps and made it pick resident sets that
// left the copy stream idle. It is what TensorRT's builder does with layer timing, kept to what
// weight streaming needs. At the min shapes (a one-token decode) steps are not timed one by one,
// which would measure launch gaps, but one whole run is, replayed as a CUDA graph as deployed
// (PlanData::min_run_ms); the planner scales its one-token estimates to that total. A decode build
// (KV caches stored in place, BuilderConfig::kv_cache_in_place) times that run at the profile's opt
// shapes instead, the decode step it is built for (one new token after a long cache), with each
// present bound to its past's buffer as a decode loop binds them.
//
// The timing engine streams every streamable weight (budget 0, the least device memory, so a model
// larger than the GPU is timed too) but copies nothing: each streamed step reads its slot of the
// ring as it is (zeros), so the times are compute alone. Inputs are zeros (KV caches at their capacity). A failure never fails
// the build: the plan keeps no times and the report says why. BuilderConfig::passes.step_timing
// off (streamrt build --no-step-timing) skips it.
#pragma once

#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

// Fills plan.step_ms and plan.min_run_ms (or leaves them empty / 0) and the report's step-timing
// fields.
void time_plan_steps(plan::PlanData& plan, const BuilderConfig& config, BuildReport& report);

}  // namespace streamrt::builder
