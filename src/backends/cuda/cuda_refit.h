// Refit on the CUDA device (DeviceBackend::refit_weights for CudaBackend; wire it there with
// `Status refit_weights(EngineState& es, const std::vector<int32_t>& c) override { return
// cuda::refit_weights(es, c); }`).
#pragma once

#include <vector>

#include "runtime/engine_state.h"

namespace streamrt::cuda {

// Puts the new host values of the `changed` weights (es.plan.data.weight_data) where the engine
// reads them: its device copy (the fixed block, or the resident block of a streaming engine) and,
// for streamable weights, the pinned host copy the streamer copies from. Host steps read
// weight_data itself. An engine loaded from a stripped plan has placed no weight yet: the refit
// that supplies the last missing one uploads them all and applies the budget in force (before
// that nothing is copied: the engine cannot run anyway). Called with no context alive.
Status refit_weights(EngineState& es, const std::vector<int32_t>& changed);

}  // namespace streamrt::cuda
