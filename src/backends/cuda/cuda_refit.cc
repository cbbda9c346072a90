#include "backends/cuda/cuda_refit.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"

namespace streamrt::cuda {

Status refit_weights(EngineState& es, const std::vector<int32_t>& changed) {
  auto* ces = static_cast<CudaEngineState*>(es.device_state.get());
  if (!ces) return internal_error("refit: engine '" + es.plan.data.name + "' has no CUDA state");
  const plan::PlanData& p = es.plan.data;
  SRT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(ces->device), "cudaSetDevice"));
  if (!ces->weights) {
    // Loaded stripped: upload_weights skipped the allocation. It allocates and copies every
    // weight once the plan is complete (refit_core clears weights_stripped then).
    if (p.weights_stripped || ces->weights_bytes == 0) return ok_status();
    return upload_weights(es, *ces);
  }
  for (int32_t i : changed) {
    if (i < 0 || static_cast<size_t>(i) >= p.weights.size() || static_cast<size_t>(i) >= p.weight_data.size())
      return internal_error("refit: weight index " + std::to_string(i) + " out of range");
    const plan::WeightEntry& w = p.weights[i];
    const Tensor& t = p.weight_data[i];
    if (!w.size) continue;
    if (t.nbytes() != w.size || !t.data())
      return internal_error("refit: weight '" + w.name + "' has " + std::to_string(t.nbytes()) + " bytes, expected " +
                            std::to_string(w.size));
    SRT_RETURN_IF_ERROR(cuda_status(cudaMemcpy(ces->weight_ptr(i), t.data(), w.size, cudaMemcpyHostToDevice),
                                    "cudaMemcpy (refit)"));
  }
  return ok_status();
}

}  // namespace streamrt::cuda
