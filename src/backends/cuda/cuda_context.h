#pragma once

#include <map>

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
  Result<CudaGraphStats> last_run_graph_stats() const override { return graph_stats_; }
  void set_streaming_profiling(bool enable) override { streamer_.set_profiling(enable); }
  Result<StreamingStats> last_run_stats() const override { return streamer_.stats(); }
  void set_step_timing(bool enable) override { profiler_.set_step_timing(enable); }
  Result<std::vector<double>> last_step_times_ms() const override;

 private:
  // A device step's operands, ready to launch.
  struct Prepared {
    std::vector<ops::TensorRef> in, out;
    std::vector<const Tensor*> host_values;
    bool needs_download = false;  // a shape input is on the device only (not capturable)
  };
  // A piece of a run captured as a graph (cuda_context_graphs.cc): steps [begin, end).
  // What a check of one device step found, so that the next check of the same inputs is a compare.
  struct StepMemo {
    std::vector<int64_t> inputs;  // input_state() when checked; empty: not checked yet
    std::vector<ops::TensorRef> out;
    std::vector<std::pair<int32_t, ops::TensorRef>> uploads;  // host values the graph copies up
  };
  struct Segment {
    size_t end = 0;
    cudaGraphExec_t exec = nullptr;
    uint64_t workspace_generation = 0;
    std::vector<std::vector<int64_t>> sigs;  // per step of the range, as captured (host steps: empty)
    std::vector<StepMemo> memo;              // per step of the range (empty until checked)
  };

  Status run_steps();
  Status run_graphed();
  Status replay_or_capture();
  Status run_piecewise();
  Result<bool> replay_segment(size_t begin, Segment& seg);
  Result<bool> check_replayed_step(size_t index, StepMemo& memo, const std::vector<int64_t>& captured);
  std::vector<int64_t> input_state(size_t index) const;
  Result<size_t> capture_segment(size_t begin, std::vector<int64_t>* peeked);
  Result<bool> stable_step(size_t index, std::vector<int64_t>* sig);
  bool host_step_capturable(size_t index) const;
  std::vector<int64_t> signature(size_t index, const Prepared& p) const;
  void drop_segments();
  void bind();
  Tensor input_on_host(int32_t v) const override;
  Status ensure_host(int32_t v);
  Status ensure_device(int32_t v);
  Status device_slot(int32_t v, uint64_t bytes, void** out);
  Status run_host_step(size_t index);
  // Inputs on the device (copied up unless `upload` is false: then only pointed at their slot,
  // those values listed in skipped_uploads_) and outputs placed; nothing launched.
  Result<Prepared> prepare_device_step(size_t index, bool upload);
  void commit_outputs(size_t index, const Prepared& p);
  // Runs a device step; its signature goes to `sig` when given.
  Status run_device_step(size_t index, std::vector<int64_t>* sig = nullptr);

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
  // Piecewise graphs: the last run's inputs and per-step signatures, and the captured pieces.
  std::vector<Dims> last_dims_;
  std::vector<void*> last_bound_;
  std::vector<std::vector<int64_t>> last_sigs_;
  std::map<size_t, Segment> segments_;   // by first step
  std::vector<uint64_t> no_capture_until_;  // per step: no capture from here before this run (one failed)
  uint64_t runs_ = 0;                       // piecewise runs so far
  std::vector<int32_t> skipped_uploads_;  // values pointed at their slot without a copy (replay)
  std::vector<int32_t> captured_uploads_;  // values whose copy up is in the graph being captured
  bool skip_uploads_ = false;
  CudaGraphStats graph_stats_;
  std::vector<std::pair<void*, uint64_t>> overflow_;    // activations larger than their arena slot
  mutable std::vector<Tensor> input_copies_;            // host copies of shape-tensor inputs
  CudaStreamer streamer_;                               // streamed weights (engines that stream)
  StepProfiler profiler_;                               // RuntimeOptions::profile, step times
};

}  // namespace streamrt::cuda
