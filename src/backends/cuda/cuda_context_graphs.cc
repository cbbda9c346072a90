// CUDA graphs of a CUDA context (ExecutionContext::set_cuda_graph).
//
// Whole runs: a run with the input dims and bound addresses of the previous one is captured and
// replayed for as long as they stay (replay_or_capture). A run whose shapes moved runs in pieces,
// or eagerly when weights stream.
//
// Pieces: a decode loop changes its dims every token (the KV cache grows by one position), yet
// most of its steps (the projections, norms and MLPs of one new token) do exactly what they did
// the token before; only the cache append and the attention over the grown cache, and the host's
// shape arithmetic, change. Launching those hundreds of unchanged steps one by one makes a
// resident decode step launch-bound. So every device step gets a signature: the addresses and dims
// of its inputs and outputs and the contents of inputs computed on the host (which captured
// copies read from pinned memory). A step whose signature equals the last run's is stable; a
// stretch of stable steps is captured as one graph (a Segment, keyed by its first step) and later
// replayed when every step in it has the signature it was captured with; the other steps run as
// usual in between. Host steps run every time: their results feed the shape rules, and the pinned
// buffers they fill are what the segments' copies read. Only runs that stream no weights go in
// pieces (the streamer's copies are ordered across the whole run).
#include "backends/cuda/cuda_context.h"

#include "backends/cuda/cuda_run_options.h"
#include "core/logging.h"

namespace streamrt::cuda {

using plan::ValueEntry;

namespace {

// Contents larger than this make a step unstable rather than signed (host results are shape
// arithmetic: a few integers).
constexpr size_t kMaxSignedBytes = 1 << 16;
// Runs to wait before capturing again from a step where a capture failed.
constexpr uint64_t kCaptureBackoff = 16;

// A host-held value as a copy up or a launch parameter sees it: its address, dims and bytes. False
// when it is too large to sign.
bool append_host(std::vector<int64_t>& s, const Tensor& h) {
  if (h.nbytes() > kMaxSignedBytes) return false;
  s.push_back(reinterpret_cast<int64_t>(h.data()));
  s.push_back(static_cast<int64_t>(h.dims().size()));
  s.insert(s.end(), h.dims().begin(), h.dims().end());
  const size_t at = s.size();
  s.resize(at + (h.nbytes() + 7) / 8, 0);
  std::memcpy(s.data() + at, h.data(), h.nbytes());
  return true;
}

void append_dims(std::vector<int64_t>& s, const ops::TensorRef& r) {
  s.push_back(reinterpret_cast<int64_t>(r.data));
  s.push_back(static_cast<int64_t>(r.dtype));
  s.push_back(static_cast<int64_t>(r.dims.size()));
  s.insert(s.end(), r.dims.begin(), r.dims.end());
}

}  // namespace

void CudaContext::drop_segments() {
  for (auto& [begin, seg] : segments_)
    if (seg.exec) cudaGraphExecDestroy(seg.exec);
  segments_.clear();
}

Status CudaContext::set_cuda_graph(bool enable) {
  graph_enabled_ = enable;
  if (!enable) {
    if (graph_exec_) SRT_CUDA(cudaGraphExecDestroy(graph_exec_));
    graph_exec_ = nullptr;
    drop_segments();
  }
  return ok_status();
}

// Empty when the step cannot be signed (too much host data), so it never counts as stable.
std::vector<int64_t> CudaContext::signature(size_t index, const Prepared& p) const {
  const ir::Node& step = plan().steps[index];
  std::vector<int64_t> s;
  s.reserve(8 * (p.in.size() + p.out.size()) + 1);
  s.push_back(static_cast<int64_t>(index));
  for (size_t k = 0; k < p.in.size(); ++k) {
    const int32_t v = step.inputs[k];
    if (v < 0) {
      s.push_back(-1);
      continue;
    }
    append_dims(s, p.in[k]);
    const Tensor& h = host_[v];
    if (h.empty() || plan().values[v].kind == ValueEntry::Kind::kWeight) continue;
    // Computed on the host: a captured copy (or a launch parameter) carries these bytes.
    if (!append_host(s, h)) return {};
  }
  for (const ops::TensorRef& r : p.out) append_dims(s, r);
  return s;
}

// Whether device step `index` would run as in the last run (its signature to `sig`). Nothing is
// copied or launched: inputs computed on the host are only pointed at their slots, and put back.
Result<bool> CudaContext::stable_step(size_t index, std::vector<int64_t>* sig) {
  const size_t mark = skipped_uploads_.size();
  Result<Prepared> p = prepare_device_step(index, false);
  for (size_t k = mark; k < skipped_uploads_.size(); ++k) dev_[skipped_uploads_[k]] = ops::TensorRef{};
  skipped_uploads_.resize(mark);
  if (!p.ok()) return p.status();
  if (p->needs_download) return false;
  *sig = signature(index, *p);
  return !sig->empty() && index < last_sigs_.size() && *sig == last_sigs_[index];
}

// A host step can run while capturing when none of its inputs must come down from the device.
bool CudaContext::host_step_capturable(size_t index) const {
  const ir::Node& step = plan().steps[index];
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    const int32_t v = step.inputs[k];
    if (v >= 0 && host_[v].empty() && !(dev_[v].present() && reads_dims_only(step, k))) return false;
  }
  return true;
}

// The state of step `index`'s operands as they stand, before any copy up: its inputs' addresses
// and dims and the contents of those held on the host (weights aside, which never move), and the
// buffers its outputs may be placed in. Equal states give equal shape rules, placements and
// signatures (all are functions of them), so a step whose state is as at its last check needs no
// new one.
std::vector<int64_t> CudaContext::input_state(size_t index) const {
  const ir::Node& step = plan().steps[index];
  std::vector<int64_t> s;
  s.reserve(6 * step.inputs.size());
  for (int32_t v : step.inputs) {
    if (v < 0 || plan().values[v].kind == ValueEntry::Kind::kWeight) {
      s.push_back(-1);
      continue;
    }
    if (dev_[v].present()) append_dims(s, dev_[v]);
    else s.push_back(-2);
    if (!host_[v].empty() && !append_host(s, host_[v])) return {};
  }
  // Where the outputs go besides the arena: the caller's buffers, the context's sequence buffers,
  // an activation's overflow buffer (each may move between runs with the same inputs).
  for (int32_t v : step.outputs) {
    if (v < 0) continue;
    s.push_back(reinterpret_cast<int64_t>(bound_[v]));
    s.push_back(static_cast<int64_t>(capacity_[v]));
    s.push_back(reinterpret_cast<int64_t>(seq_out_[v].data()));
    s.push_back(static_cast<int64_t>(seq_out_[v].size()));
    s.push_back(reinterpret_cast<int64_t>(overflow_[v].first));
  }
  return s;
}

// Whether device step `index` would launch as captured (`captured`: its signature then), leaving
// its outputs (and the host values the graph copies up for it) in place as if it had run. Inputs as
// at the last check: restored from `memo`; otherwise prepared and signed anew, and remembered.
Result<bool> CudaContext::check_replayed_step(size_t index, StepMemo& memo, const std::vector<int64_t>& captured) {
  std::vector<int64_t> state = input_state(index);
  if (!state.empty() && state == memo.inputs) {
    for (const auto& [v, ref] : memo.uploads) {
      dev_[v] = ref;
      skipped_uploads_.push_back(v);
    }
    Prepared p;
    p.out = memo.out;
    commit_outputs(index, p);
    return true;
  }
  const size_t mark = skipped_uploads_.size();
  SRT_ASSIGN_OR_RETURN(Prepared p, prepare_device_step(index, false));
  std::vector<int64_t> sig = p.needs_download ? std::vector<int64_t>{} : signature(index, p);
  if (sig.empty() || sig != captured) return false;
  memo.inputs = std::move(state);
  memo.out = p.out;
  memo.uploads.clear();
  for (size_t k = mark; k < skipped_uploads_.size(); ++k)
    memo.uploads.emplace_back(skipped_uploads_[k], dev_[skipped_uploads_[k]]);
  commit_outputs(index, p);
  last_sigs_[index] = std::move(sig);
  return true;
}

// Steps [begin, seg.end) are walked without launching (host steps run; device steps are checked
// against the signatures they were captured with); when all match the graph is launched. False
// (and the walk's pointers to uncopied inputs undone) when one differs: the caller runs the steps.
Result<bool> CudaContext::replay_segment(size_t begin, Segment& seg) {
  if (seg.workspace_generation != res_.workspace_generation) return false;
  skipped_uploads_.clear();
  skip_uploads_ = true;
  bool match = true;
  Status st = ok_status();
  size_t device_steps = 0;
  for (size_t i = begin; match && st.ok() && i < seg.end; ++i) {
    if (ces_.host_step[i]) {
      match = host_step_capturable(i);
      if (match) st = run_host_step(i);
      continue;
    }
    Result<bool> ok = check_replayed_step(i, seg.memo[i - begin], seg.sigs[i - begin]);
    if (!ok.ok()) st = ok.status();
    else match = *ok;
    ++device_steps;
  }
  skip_uploads_ = false;
  if (!st.ok() || !match) {
    for (int32_t v : skipped_uploads_) dev_[v] = ops::TensorRef{};
    skipped_uploads_.clear();
    SRT_RETURN_IF_ERROR(st);
    return false;
  }
  skipped_uploads_.clear();
  SRT_CUDA(cudaGraphLaunch(seg.exec, res_.stream));
  ++graph_stats_.graph_launches;
  graph_stats_.replayed_steps += device_steps;
  return true;
}

// Captures the stable steps from `begin` on as one graph and launches it; returns the first step
// after them, or `begin` when step `begin` is not stable (nothing was run; its signature, when it
// was taken, is in `peeked`).
Result<size_t> CudaContext::capture_segment(size_t begin, std::vector<int64_t>* peeked) {
  const size_t n = plan().steps.size();
  std::vector<int64_t> sig;
  if (ces_.host_step[begin] || no_capture_until_[begin] > runs_) return begin;
  SRT_ASSIGN_OR_RETURN(bool stable, stable_step(begin, &sig));
  if (!stable) {
    *peeked = std::move(sig);
    return begin;
  }
  Segment seg;
  seg.workspace_generation = res_.workspace_generation;
  captured_uploads_.clear();
  SRT_CUDA(cudaStreamBeginCapture(res_.stream, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  Status st = ok_status();
  size_t i = begin;
  while (st.ok() && i < n) {
    if (ces_.host_step[i]) {
      if (!host_step_capturable(i)) break;
      st = run_host_step(i);
      if (st.ok()) seg.sigs.emplace_back(), ++i;
      continue;
    }
    if (i > begin) {
      Result<bool> s = stable_step(i, &sig);
      if (!s.ok()) {
        st = s.status();
        break;
      }
      if (!*s) break;
    }
    st = run_device_step(i);
    if (st.ok()) seg.sigs.push_back(sig), ++i;
  }
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(res_.stream, &graph);
  cudaError_t inst = cudaErrorUnknown;
  if (st.ok() && end == cudaSuccess) inst = cudaGraphInstantiate(&seg.exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  if (!st.ok() || end != cudaSuccess || inst != cudaSuccess) {
    // Not capturable this time (a pinned buffer that had to grow, say): run these steps as usual,
    // and try from here again only some runs later.
    cudaGetLastError();
    log_verbose("engine '" + plan().name + "': steps from " + std::to_string(begin) + " not captured (" +
                (st.ok() ? std::string(cudaGetErrorString(end != cudaSuccess ? end : inst)) : st.message()) + ")");
    no_capture_until_[begin] = runs_ + kCaptureBackoff;
    for (int32_t v : captured_uploads_) dev_[v] = ops::TensorRef{};  // those copies never ran
    for (size_t j = begin; j < i + 1 && j < n; ++j) {
      Status r = ces_.host_step[j] ? run_host_step(j) : run_device_step(j, &last_sigs_[j]);
      if (!r.ok()) return r.with_context("engine '" + plan().name + "' step " + std::to_string(j));
    }
    return std::min(i + 1, n);
  }
  seg.end = i;
  seg.memo.resize(i - begin);
  for (size_t j = begin; j < i; ++j)
    if (!seg.sigs[j - begin].empty()) last_sigs_[j] = seg.sigs[j - begin];
  SRT_CUDA(cudaGraphLaunch(seg.exec, res_.stream));
  ++graph_stats_.captures;
  ++graph_stats_.graph_launches;
  for (const auto& s : seg.sigs) graph_stats_.replayed_steps += !s.empty();
  // Pieces that overlap this one are stale.
  for (auto it = segments_.begin(); it != segments_.end();) {
    if (it->first < i && it->second.end > begin) {
      if (it->second.exec) cudaGraphExecDestroy(it->second.exec);
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
  segments_.emplace(begin, std::move(seg));
  return i;
}

Status CudaContext::run_piecewise() {
  log_verbose("engine '" + plan().name + "': run in pieces");
  const RunOptionsScope options(es_->options);
  const size_t n = plan().steps.size();
  last_sigs_.resize(n);
  no_capture_until_.resize(n, 0);
  ++runs_;
  bind();
  SRT_RETURN_IF_ERROR(streamer_.begin_run(res_.stream, false));
  for (size_t i = 0; i < n;) {
    auto it = segments_.find(i);
    if (it != segments_.end()) {
      SRT_ASSIGN_OR_RETURN(bool replayed, replay_segment(i, it->second));
      if (replayed) {
        i = it->second.end;
        continue;
      }
      cudaGraphExecDestroy(it->second.exec);
      segments_.erase(it);
    }
    std::vector<int64_t> peeked;
    Result<size_t> next = capture_segment(i, &peeked);
    if (!next.ok()) return next.status().with_context("engine '" + plan().name + "' step " + std::to_string(i));
    if (*next > i) {
      i = *next;
      continue;
    }
    // The step as it runs now (its signature, when capture_segment took it, is this run's already).
    Status st = ces_.host_step[i] ? run_host_step(i)
                : peeked.empty()  ? run_device_step(i, &last_sigs_[i])
                                  : run_device_step(i);
    if (st.ok() && !peeked.empty()) last_sigs_[i] = std::move(peeked);
    if (!st.ok()) return st.with_context("engine '" + plan().name + "' step " + std::to_string(i));
    ++i;
  }
  return streamer_.end_run(res_.stream);
}

// Host steps run while capturing: their results (shape computations, which depend only on the
// dims) sit in pinned buffers that the captured copies read again at every replay.
Status CudaContext::replay_or_capture() {
  if (graph_exec_ && graph_dims_ == input_dims_ && graph_bound_ == bound_) {
    SRT_RETURN_IF_ERROR(streamer_.settle(res_.stream));
    SRT_CUDA(cudaGraphLaunch(graph_exec_, res_.stream));
    graph_stats_.replayed_steps = plan().steps.size();
    graph_stats_.graph_launches = 1;
    return ok_status();
  }
  if (graph_exec_) {
    SRT_CUDA(cudaGraphExecDestroy(graph_exec_));
    graph_exec_ = nullptr;
  }
  // One eager run first: it grows the workspace and fills the algorithm caches, which
  // allocate and synchronize, and those are not allowed while capturing.
  SRT_RETURN_IF_ERROR(run_steps());
  SRT_RETURN_IF_ERROR(streamer_.settle(res_.stream));
  SRT_CUDA(cudaStreamBeginCapture(res_.stream, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  Status st = run_steps();
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(res_.stream, &graph);
  if (!st.ok() || end != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return st.ok() ? cuda_status(end, "cudaStreamEndCapture") : st;
  }
  cudaError_t inst = cudaGraphInstantiate(&graph_exec_, graph, 0);
  cudaGraphDestroy(graph);
  SRT_CUDA(inst);
  graph_dims_ = input_dims_;
  graph_bound_ = bound_;
  graph_stats_.captures = 1;
  return ok_status();  // the eager run above produced this run's outputs
}

// A whole-run graph for a shape seen twice in a row; pieces when the shapes moved since the last
// run, or an eager run when weights stream (their copies are ordered across the whole run).
Status CudaContext::run_graphed() {
  graph_stats_.steps = plan().steps.size();  // the rest was reset by enqueue
  const bool whole = (graph_exec_ && graph_dims_ == input_dims_ && graph_bound_ == bound_) ||
                     (last_dims_ == input_dims_ && last_bound_ == bound_);
  Status st = whole ? replay_or_capture() : streamer_.active() ? run_steps() : run_piecewise();
  last_dims_ = input_dims_;
  last_bound_ = bound_;
  return st;
}

}  // namespace streamrt::cuda
