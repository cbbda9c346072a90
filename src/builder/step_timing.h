// Step timing: a weight-streaming build on a device that can time its steps (CUDA) runs the
// finished plan there at the profile's max shapes and records each step's measured time in the
// plan (PlanData::step_ms). The residency planner uses them instead of its FLOP / byte estimates,
// which are off by 3-5x for attention and element-wise steps and made it pick resident sets that
// left the copy stream idle. It is what TensorRT's builder does with layer timing, kept to what
// weight streaming needs. (One-token shapes are not timed: per step they measure launch gaps.)
//
// The timing engine streams every streamable weight (budget 0, the least device memory, so a model
// larger than the GPU is timed too) from placeholder bytes: the copies are real, contents are not.
// Inputs are zeros. A failure never fails the build: the plan keeps no times and the report says
// why. STREAMRT_NO_STEP_TIMING=1 skips it.
#pragma once

#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

// Fills plan.step_ms (or leaves it empty) and the report's step-timing fields.
void time_plan_steps(plan::PlanData& plan, DeviceType device, BuildReport& report);

}  // namespace streamrt::builder
