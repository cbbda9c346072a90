#pragma once

#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/cuda_profiler.h"
#include "backends/cuda/cuda_streamer.h"
#include "runtime/context_base.h"

namespace streamrt::cuda {

// Page-locked host memory that only grows (device copies from it can be graph-captured).
struct PinnedBuffer {
  void* data = nullptr;
  size_t capacity = 0;
  Status reserve(size_t bytes);
  ~PinnedBuffer();
};

class CudaContext final : public ContextBase {
 public:
  CudaContext(std::shared_ptr<const Engine> engine, const CudaEngineState& ces);
  ~CudaContext() override;
  Status init();
  Status enqueue(void* stream) override;
  Status synchronize(void* stream) override;
  Status set_cuda_graph(bool enable) override;
  void set_streaming_profiling(bool enable) override { streamer_.set_profiling(enable); }
  Result<StreamingStats> last_run_stats() const override { return streamer_.stats(); }
  void set_step_timing(bool enable) override { profiler_.set_step_timing(enable); }
  Result<std::vector<double>> last_step_times_ms() const override;

 private:
  Status run_steps();
  Status replay_or_capture();
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
  bool reserved_ = false;  // arena and slots are the engine's reservation (CudaEngineState)
  std::vector<ops::TensorRef> dev_;                     // per value: device copy, when there is one
  std::vector<Tensor> host_;                            // per value: host copy, when there is one
  std::vector<PinnedBuffer> host_buffers_;              // storage of host copies
  // CUDA graph of the last run, replayed while input dims and bound addresses are unchanged.
  bool graph_enabled_ = false;
  bool capturing_ = false;
  cudaGraphExec_t graph_exec_ = nullptr;
  std::vector<Dims> graph_dims_;
  std::vector<void*> graph_bound_;
  std::vector<std::pair<void*, uint64_t>> overflow_;    // activations larger than their arena slot
  mutable std::vector<Tensor> input_copies_;            // host copies of shape-tensor inputs
  CudaStreamer streamer_;                               // streamed weights (engines that stream)
  StepProfiler profiler_;                               // RuntimeOptions::profile, step times
};

}  // namespace streamrt::cuda
