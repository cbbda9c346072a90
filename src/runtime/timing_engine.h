// Engines the builder loads to time a plan's steps on the target device (src/builder/step_timing.h).
#pragma once

#include "plan/plan.h"
#include "streamrt/runtime.h"

namespace streamrt {

struct EngineFactory {
  // An engine over `plan` held in memory (its weight tensors are shared, nothing is serialized)
  // that streams every streamable weight (budget 0: the least device memory) without copying it
  // (steps read their zeroed ring slots): outputs are meaningless, compute times are real.
  // kUnsupported for a device whose contexts cannot time steps.
  static Result<std::shared_ptr<Engine>> timing_engine(const plan::PlanData& plan, DeviceType device);
};

}  // namespace streamrt
