// Per-engine CUDA state: where each step runs and the weights' device copy.
#pragma once

#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "runtime/engine_state.h"

namespace streamrt::cuda {

struct CudaEngineState {
  // Per step: run on the host with the CPU kernel. Steps that compute shape tensors (values
  // some step reads as shapes: Shape -> Gather -> Concat -> Reshape) run there, and so does
  // any op without a CUDA kernel (a warning names it at load).
  std::vector<uint8_t> host_step;
  std::vector<CudaKernelFn> kernels;  // per step; null for host steps
  void* weights = nullptr;            // one device block holding every weight
  std::vector<uint64_t> weight_offsets;  // per plan weight, into `weights`
  uint64_t weights_bytes = 0;
  int device = 0;

  ~CudaEngineState();
  void* weight_ptr(int32_t index) const { return static_cast<uint8_t*>(weights) + weight_offsets[index]; }
};

// Decides host vs device placement of the steps (see host_step above).
void place_steps(const EngineState& es, CudaEngineState& ces, std::vector<std::string>* fallbacks);

// Uploads every weight of the plan to one device allocation.
Status upload_weights(const EngineState& es, CudaEngineState& ces);

}  // namespace streamrt::cuda
