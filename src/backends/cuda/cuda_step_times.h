// RuntimeOptions::step_times_path: a context's measured per-step GPU times next to the residency
// planner's estimates, appended to the file as JSON lines when the context goes away (see the .cc).
#pragma once

#include <vector>

#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/cuda_profiler.h"

namespace streamrt::cuda {

// Does nothing unless the path is set (profiler.step_times_path() not empty).
void write_step_times(const EngineState& es, const CudaEngineState& ces, const StepProfiler& profiler,
                      const std::vector<Dims>& output_dims);

}  // namespace streamrt::cuda
