// A context's weight streamer: a ring of kStreamSlots device slots, a copy stream and events.
// Copies for the streamed steps run on the copy stream from pinned host memory, up to two
// streamed steps ahead of the one computing; a step waits only for its own slot's copy, and a
// slot is refilled only after the step that read it finished. Works inside CUDA graph capture
// (the copy stream forks from and joins the compute stream through events). With
// RuntimeOptions::stream_next_run_ahead, an eager run ends by issuing the next run's first
// kStreamSlots copies, which wait only for their slots' last readers: they overlap this run's last
// steps and the host's turnaround (a decode loop's next token).
#pragma once

#include "backends/cuda/cuda_engine.h"

namespace streamrt::cuda {

class CudaStreamer {
 public:
  CudaStreamer(const EngineState& es, const CudaEngineState& ces) : es_(es), ces_(ces) {}
  ~CudaStreamer();
  CudaStreamer(const CudaStreamer&) = delete;
  CudaStreamer& operator=(const CudaStreamer&) = delete;

  // Creates the copy stream and events and allocates the slots, or uses `slots` (the engine's
  // reservation, scratch_bytes() long) when given (nothing when nothing streams).
  Status init(void* slots = nullptr);
  bool active() const { return !ces_.streamed_steps.empty(); }
  void set_profiling(bool enable) { profiling_ = enable; }

  Status begin_run(cudaStream_t compute, bool capturing);
  // Before device step `s`: issues copies up to two streamed steps ahead, makes `compute` wait
  // for step s's weights and points their refs (indexed by plan value) at the slot.
  Status before_step(size_t s, cudaStream_t compute, std::vector<ops::TensorRef>& refs);
  Status after_step(size_t s, cudaStream_t compute);
  // Records the run's end; then, with stream_next_run_ahead, an eager run issues the next run's
  // first copies.
  Status end_run(cudaStream_t compute);
  // Before a CUDA graph is captured or launched: a graph's copies do not follow the copy stream's
  // earlier work, so `compute` first waits for copies the last eager run issued ahead (a late one
  // would overwrite a slot the graph has refilled since).
  Status settle(cudaStream_t compute);
  // Blocks until every copy issued has landed: before the slots go back to the engine (copies for
  // a next run that will not come may still be in flight).
  void wait_copies();
  // Statistics of the last run; the run must have completed.
  Result<StreamingStats> stats() const;

 private:
  // Copies streamed step j's weights into its slot; `begin` / `end` (may be null) are recorded
  // around the copies when profiling.
  Status issue(size_t j, bool capturing, cudaEvent_t begin, cudaEvent_t end);
  Status ensure_profile_events(size_t n);
  void write_trace() const;  // RuntimeOptions::stream_trace_path

  const EngineState& es_;
  const CudaEngineState& ces_;
  void* slots_ = nullptr;
  bool own_slots_ = true;
  cudaStream_t copy_ = nullptr;
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t prefetch_done_ = nullptr;  // after the copies end_run issued
  cudaEvent_t copied_[kStreamSlots] = {};
  cudaEvent_t freed_[kStreamSlots] = {};
  bool freed_recorded_[kStreamSlots] = {};
  size_t issued_ = 0;  // streamed steps whose copies were issued this run
  size_t next_ = 0;    // index into streamed_steps of the next step to run
  size_t prefetched_ = 0;  // streamed steps the previous run's end issued for this one
  bool prefetch_profiled_ = false;  // their copies were timed (into ahead_begin_ / ahead_end_)
  uint64_t carried_bytes_ = 0, carried_copies_ = 0;  // their statistics, counted in the run that reads them
  // The copy events of the prefetched steps, swapped into copy_begin_ / copy_end_ by the run that
  // reads them (the previous run's own events stay readable until then).
  cudaEvent_t ahead_begin_[kStreamSlots] = {}, ahead_end_[kStreamSlots] = {};
  bool capturing_ = false;
  bool profiling_ = false;
  // Profiling: per streamed step copy start/end (copy stream) and stall begin/end (compute).
  std::vector<cudaEvent_t> copy_begin_, copy_end_, stall_begin_, stall_end_;
  cudaEvent_t run_begin_ = nullptr, run_end_ = nullptr;
  bool profiled_ = false;
  uint64_t bytes_ = 0, copies_ = 0;
};

}  // namespace streamrt::cuda
