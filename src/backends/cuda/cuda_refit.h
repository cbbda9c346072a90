// Refit on the CUDA device (DeviceBackend::refit_weights for CudaBackend).
#pragma once

#include <vector>

#include "runtime/engine_state.h"

namespace streamrt::cuda {

// Copies the new host values of the `changed` weights (es.plan.data.weight_data) into the
// engine's device copy. An engine loaded from a stripped plan has no device copy yet: it is
// uploaded whole by the refit that supplies the last missing weight (before that, nothing is
// copied: the engine cannot run anyway). Host steps read weight_data directly.
Status refit_weights(EngineState& es, const std::vector<int32_t>& changed);

}  // namespace streamrt::cuda
