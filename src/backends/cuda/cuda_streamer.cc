#include "backends/cuda/cuda_streamer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace streamrt::cuda {
namespace {

Status create_event(cudaEvent_t* e, bool timing) {
  SRT_CUDA(cudaEventCreateWithFlags(e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return ok_status();
}

float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return ms;
}

}  // namespace

CudaStreamer::~CudaStreamer() {
  if (copy_) cudaStreamSynchronize(copy_);
  for (auto* list : {&copy_begin_, &copy_end_, &stall_begin_, &stall_end_})
    for (cudaEvent_t e : *list) cudaEventDestroy(e);
  for (cudaEvent_t e : {fork_, prefetch_done_, run_begin_, run_end_})
    if (e) cudaEventDestroy(e);
  for (int i = 0; i < kStreamSlots; ++i)
    for (cudaEvent_t e : {copied_[i], freed_[i], ahead_begin_[i], ahead_end_[i]})
      if (e) cudaEventDestroy(e);
  if (copy_) cudaStreamDestroy(copy_);
  if (slots_ && own_slots_) cudaFree(slots_);
}

Status CudaStreamer::init(void* slots) {
  if (!active()) return ok_status();
  own_slots_ = slots == nullptr;
  slots_ = slots;
  cudaError_t e = slots ? cudaSuccess : cudaMalloc(&slots_, ces_.scratch_bytes());
  if (e != cudaSuccess) {
    cudaGetLastError();
    slots_ = nullptr;
    return out_of_memory("weight-streaming scratch of " + std::to_string(ces_.scratch_bytes()) + " bytes: " +
                         cudaGetErrorString(e));
  }
  // A timing engine's steps read their slots as they are: zeros, not whatever the allocator left.
  if (es_.placeholder_streamed_weights) SRT_CUDA(cudaMemset(slots_, 0, ces_.scratch_bytes()));
  SRT_CUDA(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  SRT_RETURN_IF_ERROR(create_event(&fork_, false));
  SRT_RETURN_IF_ERROR(create_event(&prefetch_done_, false));
  for (int i = 0; i < kStreamSlots; ++i) {
    SRT_RETURN_IF_ERROR(create_event(&copied_[i], false));
    SRT_RETURN_IF_ERROR(create_event(&freed_[i], false));
    SRT_RETURN_IF_ERROR(create_event(&ahead_begin_[i], true));
    SRT_RETURN_IF_ERROR(create_event(&ahead_end_[i], true));
  }
  SRT_RETURN_IF_ERROR(create_event(&run_begin_, true));
  return create_event(&run_end_, true);
}

Status CudaStreamer::ensure_profile_events(size_t n) {
  for (auto* list : {&copy_begin_, &copy_end_, &stall_begin_, &stall_end_})
    while (list->size() < n) {
      cudaEvent_t e = nullptr;
      SRT_RETURN_IF_ERROR(create_event(&e, true));
      list->push_back(e);
    }
  return ok_status();
}

Status CudaStreamer::begin_run(cudaStream_t compute, bool capturing) {
  issued_ = next_ = 0;
  bytes_ = copies_ = 0;
  capturing_ = capturing;
  profiled_ = profiling_ && !es_.placeholder_streamed_weights;
  // The previous run's end issued this run's first copies (a capture settled them first). A profiled
  // run whose copies were not timed issues its own again, after them on the copy stream.
  const size_t ahead = prefetched_ && !capturing && (prefetch_profiled_ || !profiled_) ? prefetched_ : 0;
  prefetched_ = 0;
  issued_ = ahead;
  if (ahead) {
    bytes_ = carried_bytes_;
    copies_ = carried_copies_;
  }
  // A timing engine copies nothing (EngineState::placeholder_streamed_weights): no copy stream work,
  // no events between the streams, so its runs time compute alone, graph replays included.
  if (!active() || es_.placeholder_streamed_weights) return ok_status();
  if (profiling_) {
    SRT_RETURN_IF_ERROR(ensure_profile_events(ces_.streamed_steps.size()));
    for (size_t j = 0; j < ahead; ++j) {
      std::swap(copy_begin_[j], ahead_begin_[j]);
      std::swap(copy_end_[j], ahead_end_[j]);
    }
    SRT_CUDA(cudaEventRecord(run_begin_, compute));
  }
  // Fork: the copy stream follows the work already queued on the compute stream (and joins a
  // graph capture that way).
  SRT_CUDA(cudaEventRecord(fork_, compute));
  SRT_CUDA(cudaStreamWaitEvent(copy_, fork_, 0));
  return ok_status();
}

Status CudaStreamer::issue(size_t j, bool capturing, cudaEvent_t begin, cudaEvent_t end) {
  const int slot = static_cast<int>(j % kStreamSlots);
  // The slot's previous reader must be done. Within a run that event was recorded by
  // after_step; across runs (eager only) it is the previous run's, still ordered correctly.
  if (j >= kStreamSlots || (!capturing && freed_recorded_[slot])) SRT_CUDA(cudaStreamWaitEvent(copy_, freed_[slot], 0));
  if (begin) SRT_CUDA(cudaEventRecord(begin, copy_));
  const size_t s = ces_.streamed_steps[j];
  const plan::PlanData& p = es_.plan.data;
  uint8_t* base = static_cast<uint8_t*>(slots_) + slot * ces_.slot_bytes;
  const std::vector<int32_t>& list = ces_.step_streamed[s];
  const std::vector<uint64_t>& offsets = ces_.step_slot_offset[s];
  for (size_t k = 0; k < list.size();) {
    const int32_t w = list[k];
    uint8_t* dst = base + offsets[k];
    // A resident prefix comes from device memory; only the rest crosses the bus.
    const uint64_t prefix = ces_.prefix_bytes(w);
    if (prefix) SRT_CUDA(cudaMemcpyAsync(dst, ces_.prefix_dev[w], prefix, cudaMemcpyDeviceToDevice, copy_));
    const auto* src = static_cast<const uint8_t*>(ces_.host_src[w]) + prefix;
    uint64_t n = p.weights[w].size - prefix;
    bytes_ += n;
    ++copies_;
    // The step's next weights, where they lie in host memory as in the slot (consecutive plan weights:
    // a compressed step's codes, scales and zero points), go in the same copy: each copy costs a few
    // microseconds however small, and a 4-bit step's scales and zero points are ~2 % of its bytes.
    size_t e = k + 1;
    for (; e < list.size() && !ces_.prefix_bytes(list[e]); ++e) {
      const int32_t prev = list[e - 1], next = list[e];
      const auto* prev_src = static_cast<const uint8_t*>(ces_.host_src[prev]);
      const auto* next_src = static_cast<const uint8_t*>(ces_.host_src[next]);
      const uint64_t gap = stream_align(p.weights[prev].size);
      if (next_src != prev_src + gap || offsets[e] != offsets[e - 1] + gap) break;
      n = static_cast<uint64_t>(next_src + p.weights[next].size - src);
      bytes_ += p.weights[next].size;
      ++copies_;  // weights moved (StreamingStats::weights_streamed), not cudaMemcpy calls
    }
    SRT_CUDA(cudaMemcpyAsync(dst + prefix, src, n, cudaMemcpyHostToDevice, copy_));
    k = e;
  }
  if (end) SRT_CUDA(cudaEventRecord(end, copy_));
  SRT_CUDA(cudaEventRecord(copied_[slot], copy_));
  return ok_status();
}

Status CudaStreamer::before_step(size_t s, cudaStream_t compute, std::vector<ops::TensorRef>& refs) {
  if (!active() || ces_.step_streamed[s].empty()) return ok_status();
  const size_t j = next_;
  if (j >= ces_.streamed_steps.size() || ces_.streamed_steps[j] != s)
    return internal_error("weight streamer out of step order at step " + std::to_string(s));
  // Prefetch depth: this step and the next kStreamSlots - 1 streamed steps.
  const int slot = static_cast<int>(j % kStreamSlots);
  if (!es_.placeholder_streamed_weights) {
    const size_t until = std::min(ces_.streamed_steps.size(), j + kStreamSlots);
    for (; issued_ < until; ++issued_)
      SRT_RETURN_IF_ERROR(issue(issued_, capturing_, profiled_ ? copy_begin_[issued_] : nullptr,
                                profiled_ ? copy_end_[issued_] : nullptr));
    if (profiled_) SRT_CUDA(cudaEventRecord(stall_begin_[j], compute));
    SRT_CUDA(cudaStreamWaitEvent(compute, copied_[slot], 0));
    if (profiled_) SRT_CUDA(cudaEventRecord(stall_end_[j], compute));
  }
  uint8_t* base = static_cast<uint8_t*>(slots_) + slot * ces_.slot_bytes;
  const plan::PlanData& p = es_.plan.data;
  for (int32_t v : p.steps[s].inputs) {
    if (v < 0 || p.values[v].kind != plan::ValueEntry::Kind::kWeight) continue;
    const auto& list = ces_.step_streamed[s];
    auto it = std::find(list.begin(), list.end(), p.values[v].weight_index);
    if (it == list.end()) continue;
    refs[v].data = base + ces_.step_slot_offset[s][it - list.begin()];
  }
  return ok_status();
}

Status CudaStreamer::after_step(size_t s, cudaStream_t compute) {
  if (!active() || ces_.step_streamed[s].empty()) return ok_status();
  const int slot = static_cast<int>(next_ % kStreamSlots);
  ++next_;
  if (es_.placeholder_streamed_weights) return ok_status();
  SRT_CUDA(cudaEventRecord(freed_[slot], compute));
  freed_recorded_[slot] = true;
  return ok_status();
}

Status CudaStreamer::end_run(cudaStream_t compute) {
  if (!active()) return ok_status();
  if (profiled_) SRT_CUDA(cudaEventRecord(run_end_, compute));
  // The next run's first steps copy now, each waiting for its slot's last reader in this run (the
  // freed event after_step recorded): their copies overlap this run's last steps and whatever the host
  // does before the next run, where the copy engine would otherwise stand idle. The weights are the
  // same for every run (refit and budget changes need that no context exist). Not when capturing (a
  // graph copies its own) or timing. Profiled, their copies are timed into events of their own: this
  // run's stay readable until the next run begins.
  if (capturing_ || es_.placeholder_streamed_weights || !es_.options.stream_next_run_ahead) return ok_status();
  const uint64_t bytes = bytes_, copies = copies_;
  const size_t n = std::min<size_t>(kStreamSlots, ces_.streamed_steps.size());
  for (size_t j = 0; j < n; ++j)
    SRT_RETURN_IF_ERROR(issue(j, false, profiling_ ? ahead_begin_[j] : nullptr, profiling_ ? ahead_end_[j] : nullptr));
  prefetch_profiled_ = profiling_;
  carried_bytes_ = bytes_ - bytes;
  carried_copies_ = copies_ - copies;
  bytes_ = bytes;
  copies_ = copies;
  prefetched_ = n;
  SRT_CUDA(cudaEventRecord(prefetch_done_, copy_));
  return ok_status();
}

void CudaStreamer::wait_copies() {
  if (copy_) cudaStreamSynchronize(copy_);
  prefetched_ = 0;
}

Status CudaStreamer::settle(cudaStream_t compute) {
  if (!prefetched_) return ok_status();
  prefetched_ = 0;  // the graph, or the eager run after it, copies these steps again
  SRT_CUDA(cudaStreamWaitEvent(compute, prefetch_done_, 0));
  return ok_status();
}

Result<StreamingStats> CudaStreamer::stats() const {
  StreamingStats st;
  st.bytes_streamed = bytes_;
  st.weights_streamed = copies_;
  if (!active() || !profiled_) return st;
  if (cudaEventQuery(run_end_) == cudaErrorNotReady)
    return invalid_state("the run is still in flight; synchronize its stream before reading its statistics");
  cudaGetLastError();
  for (size_t j = 0; j < issued_; ++j) {
    st.copy_ms += elapsed_ms(copy_begin_[j], copy_end_[j]);
    st.stall_ms += elapsed_ms(stall_begin_[j], stall_end_[j]);
  }
  st.run_ms = elapsed_ms(run_begin_, run_end_);
  write_trace();
  return st;
}

// RuntimeOptions::stream_trace_path: the profiled run's timeline, one JSON line appended per run: for
// each streamed step (in order) its plan step, bytes, and ms from the run's start when its copy
// began and ended and when compute began and stopped waiting for it.
void CudaStreamer::write_trace() const {
  const std::string& path = es_.options.stream_trace_path;
  if (path.empty()) return;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) return;
  const plan::PlanData& p = es_.plan.data;
  std::fprintf(f, "{\"budget\":%llu,\"run_ms\":%.4f,\"slots\":%d,\"slot_bytes\":%llu,\"streamed\":[",
               static_cast<unsigned long long>(es_.budget), elapsed_ms(run_begin_, run_end_), kStreamSlots,
               static_cast<unsigned long long>(ces_.slot_bytes));
  for (size_t j = 0; j < issued_; ++j) {
    const size_t s = ces_.streamed_steps[j];
    uint64_t bytes = 0;
    for (int32_t w : ces_.step_streamed[s]) bytes += p.weights[w].size - ces_.prefix_bytes(w);
    std::fprintf(f, "%s[%zu,%llu,%.4f,%.4f,%.4f,%.4f]", j ? "," : "", s, static_cast<unsigned long long>(bytes),
                 elapsed_ms(run_begin_, copy_begin_[j]), elapsed_ms(run_begin_, copy_end_[j]),
                 elapsed_ms(run_begin_, stall_begin_[j]), elapsed_ms(run_begin_, stall_end_[j]));
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
}

}  // namespace streamrt::cuda
