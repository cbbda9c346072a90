#include "backends/cuda/cuda_refit.h"

#include <cstring>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"

namespace streamrt::cuda {

Status refit_weights(EngineState& es, const std::vector<int32_t>& changed) {
  auto* ces = static_cast<CudaEngineState*>(es.device_state.get());
  if (!ces) return internal_error("refit: engine '" + es.plan.data.name + "' has no CUDA state");
  const plan::PlanData& p = es.plan.data;
  if (p.weights_stripped) return ok_status();  // weights still missing: nothing is placed yet
  if (ces->registered)
    return unsupported("refit: engine '" + p.name + "' streams weights from memory its loader owns (weights held "
                       "apart, registered in place): load it again with the new weights instead");
  SRT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(ces->device), "cudaSetDevice"));
  if (!ces->fixed && !ces->pinned && !ces->resident) {
    // Loaded stripped (upload_weights and apply_budget placed nothing): place every weight now.
    // (An engine with no weight on the device at all comes here too; placing nothing again is
    // harmless.)
    SRT_RETURN_IF_ERROR(upload_weights(es, *ces));
    return es.streamable_bytes ? apply_budget(es, *ces) : ok_status();
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
    if (static_cast<size_t>(i) < ces->host_src.size() && ces->host_src[i])  // the streamer's source
      std::memcpy(const_cast<void*>(ces->host_src[i]), t.data(), w.size);
    const bool in_place = static_cast<size_t>(i) < ces->host_src.size() && ces->weight_dev[i] == ces->host_src[i];
    if (static_cast<size_t>(i) < ces->weight_dev.size() && ces->weight_dev[i] && !in_place)  // fixed or resident copy
      SRT_RETURN_IF_ERROR(cuda_status(cudaMemcpy(ces->weight_dev[i], t.data(), w.size, cudaMemcpyHostToDevice),
                                      "cudaMemcpy (refit)"));
    if (static_cast<size_t>(i) < ces->prefix_dev.size() && ces->prefix_bytes(i))  // a streamed weight's resident prefix
      SRT_RETURN_IF_ERROR(cuda_status(cudaMemcpy(ces->prefix_dev[i], t.data(), ces->prefix_bytes(i), cudaMemcpyHostToDevice),
                                      "cudaMemcpy (refit, resident prefix)"));
  }
  return ok_status();
}

}  // namespace streamrt::cuda
