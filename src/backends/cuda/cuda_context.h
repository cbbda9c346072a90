#pragma once

#include "backends/cuda/cuda_engine.h"
#include "runtime/context_base.h"

namespace streamrt::cuda {

class CudaContext final : public ContextBase {
 public:
  CudaContext(std::shared_ptr<const Engine> engine, const CudaEngineState& ces);
  ~CudaContext() override;
  Status init();
  Status enqueue(void* stream) override;
  Status synchronize(void* stream) override;

 private:
  void bind();
  Tensor input_on_host(int32_t v) const override;
  Status ensure_host(int32_t v);
  Status ensure_device(int32_t v);
  Status device_slot(int32_t v, uint64_t bytes, void** out);
  Status run_host_step(size_t index);
  Status run_device_step(size_t index);

  const CudaEngineState& ces_;
  CudaResources res_;
  cudaStream_t own_stream_ = nullptr;
  void* arena_ = nullptr;
  std::vector<ops::TensorRef> dev_;                     // per value: device copy, when there is one
  std::vector<Tensor> host_;                            // per value: host copy, when there is one
  std::vector<std::vector<uint8_t>> host_buffers_;      // storage of host copies
  std::vector<std::pair<void*, uint64_t>> overflow_;    // activations larger than their arena slot
  mutable std::vector<Tensor> input_copies_;            // host copies of shape-tensor inputs
};

}  // namespace streamrt::cuda
