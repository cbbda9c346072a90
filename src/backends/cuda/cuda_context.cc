// A CUDA execution context: activations in one device arena, device steps launched on the
// context's stream, host steps (shape computations, ops without a CUDA kernel) run with the
// CPU kernels on host copies that are made only when a step needs them.
#include "backends/cuda/cuda_context.h"

#include "backends/cuda/cuda_run_options.h"
#include "backends/cuda/cuda_step_times.h"
#include "core/logging.h"
#include "plan/view_steps.h"

namespace streamrt::cuda {

using plan::ValueEntry;

CudaContext::CudaContext(std::shared_ptr<const Engine> engine, const CudaEngineState& ces)
    : ContextBase(std::move(engine)),
      ces_(ces),
      streamer_(*es_, ces),
      profiler_(es_->options.profile, es_->options.step_times_path) {
  const size_t nv = plan().values.size();
  dev_.resize(nv);
  host_.resize(nv);
  host_buffers_.resize(nv);
  overflow_.assign(nv, {nullptr, 0});
}

Status PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= capacity) return ok_status();
  if (data) SRT_CUDA(cudaFreeHost(data));
  data = nullptr;
  // Doubling: host results that grow a little each run (a decode loop's positions) move rarely,
  // and each move costs the CUDA graphs that copy from here a re-capture.
  const size_t want = std::max(bytes, 2 * capacity);
  capacity = 0;
  SRT_CUDA(cudaMallocHost(&data, want));
  capacity = want;
  return ok_status();
}

PinnedBuffer::~PinnedBuffer() {
  if (data) cudaFreeHost(data);
}

CudaContext::~CudaContext() {
  if (res_.stream) cudaStreamSynchronize(res_.stream);
  streamer_.wait_copies();  // the next run's copies may be in flight into slots the engine takes back
  profiler_.collect();
  write_step_times(*es_, ces_, profiler_, output_dims_);
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  drop_segments();
  for (auto& [ptr, size] : overflow_)
    if (ptr) cudaFree(ptr);
  if (reserved_) {
    return_reservation(ces_, res_);  // arena, slots, handles and workspace stay the engine's
  } else {
    if (arena_) cudaFree(arena_);
    if (res_.workspace) cudaFree(res_.workspace);
    if (res_.cublaslt) cublasLtDestroy(res_.cublaslt);
    if (res_.cudnn) cudnnDestroy(res_.cudnn);
  }
  if (own_stream_) cudaStreamDestroy(own_stream_);
}

Status CudaContext::init() {
  SRT_CUDA(cudaSetDevice(ces_.device));
  // The engine's reservation (the first context's memory and handles, held since load).
  const ContextReservation& r = ces_.reservation;
  reserved_ = take_reservation(ces_, plan().arena_size, ces_.scratch_bytes());
  SRT_CUDA(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
  if (reserved_) {
    res_.cublaslt = r.cublaslt;
    res_.cudnn = r.cudnn;
    res_.workspace = r.workspace;
    res_.workspace_size = r.workspace_size;
  } else {
    SRT_CUBLAS(cublasLtCreate(&res_.cublaslt));
    SRT_CUDNN(cudnnCreate(&res_.cudnn));
  }
  SRT_CUDA(cudaDeviceGetAttribute(&res_.sm_count, cudaDevAttrMultiProcessorCount, ces_.device));
  SRT_CUDA(cudaDeviceGetAttribute(&res_.cc_major, cudaDevAttrComputeCapabilityMajor, ces_.device));
  SRT_CUDA(cudaDeviceGetAttribute(&res_.cc_minor, cudaDevAttrComputeCapabilityMinor, ces_.device));
  SRT_RETURN_IF_ERROR(res_.ensure_workspace(kContextWorkspace));
  if (reserved_) {
    arena_ = plan().arena_size ? r.block : nullptr;
    SRT_RETURN_IF_ERROR(streamer_.init(r.scratch ? static_cast<uint8_t*>(r.block) + r.arena : nullptr));
  } else {
    if (plan().arena_size) SRT_CUDA(cudaMalloc(&arena_, plan().arena_size));
    SRT_RETURN_IF_ERROR(streamer_.init());
  }
  profiler_.set_name(plan().name);
  return ok_status();
}

Status CudaContext::synchronize(void* stream) {
  SRT_CUDA(cudaStreamSynchronize(stream ? static_cast<cudaStream_t>(stream) : own_stream_));
  profiler_.collect();
  return ok_status();
}

Result<std::vector<double>> CudaContext::last_step_times_ms() const {
  if (profiler_.last_run().empty())
    return invalid_state("engine '" + plan().name + "': no timed run yet (set_step_timing(true), then run eagerly)");
  std::vector<double> ms = profiler_.last_run();
  ms.resize(plan().steps.size(), 0.0);
  return ms;
}

// Shape tensors bound as inputs live on the device: small ones are copied for shape passes.
Tensor CudaContext::input_on_host(int32_t v) const {
  const plan::IoTensor* io = input_desc(v);
  auto t = Tensor::allocate(io->dtype, input_dims_[v]);
  if (!t.ok() || t->numel() > 4096) return Tensor();
  if (cudaMemcpy(t->mutable_data(), bound_[v], t->nbytes(), cudaMemcpyDeviceToHost) != cudaSuccess) return Tensor();
  input_copies_.resize(plan().values.size());
  input_copies_[v] = std::move(t).value();
  return input_copies_[v];
}

void CudaContext::bind() {
  for (auto& r : dev_) r = ops::TensorRef{};
  for (auto& h : host_) h = Tensor();
  for (const auto& io : plan().inputs) dev_[io.value] = {io.dtype, input_dims_[io.value], bound_[io.value]};
  for (size_t v = 0; v < plan().values.size(); ++v) {
    const ValueEntry& e = plan().values[v];
    if (e.kind != ValueEntry::Kind::kWeight) continue;
    const Tensor& w = plan().weight_data[e.weight_index];
    dev_[v] = ops::TensorRef{w.dtype(), w.dims(), ces_.weight_ptr(e.weight_index)};
    host_[v] = w;  // the mapped plan: host copy for free
  }
}

// Makes sure value v has a host copy (a synchronous device-to-host copy when needed).
Status CudaContext::ensure_host(int32_t v) {
  if (!host_[v].empty()) return ok_status();
  const ops::TensorRef& d = dev_[v];
  if (!d.present()) return internal_error("value '" + plan().values[v].name + "' was not computed");
  if (capturing_)
    return unsupported("value '" + plan().values[v].name + "' is needed on the host mid-run (a data-dependent " +
                       "shape); such a run cannot be captured as a CUDA graph");
  auto& buf = host_buffers_[v];
  SRT_ASSIGN_OR_RETURN(const uint64_t bytes, stored_bytes(v, d.dims));  // a KV cache: with its capacity
  SRT_RETURN_IF_ERROR(buf.reserve(bytes + 64));
  if (bytes) {
    SRT_CUDA(cudaMemcpyAsync(buf.data, d.data, bytes, cudaMemcpyDeviceToHost, res_.stream));
    SRT_CUDA(cudaStreamSynchronize(res_.stream));
  }
  host_[v] = Tensor::view(d.dtype, d.dims, buf.data, nullptr);
  return ok_status();
}

// Device memory for value v of `bytes` bytes: the user's buffer for outputs, the arena slot
// for activations, or an overflow buffer for activations larger than planned.
Status CudaContext::device_slot(int32_t v, uint64_t bytes, void** out) {
  const ValueEntry& e = plan().values[v];
  if (e.kind == ValueEntry::Kind::kOutput) return output_buffer(v, bytes, out);
  if (e.kind != ValueEntry::Kind::kActivation) return internal_error("'" + e.name + "' is not writable");
  if (bytes <= e.arena_size) {
    *out = static_cast<uint8_t*>(arena_) + e.arena_offset;
    return ok_status();
  }
  auto& [ptr, size] = overflow_[v];
  if (size < bytes) {
    if (ptr) SRT_CUDA(cudaFreeAsync(ptr, res_.stream));
    SRT_CUDA(cudaMallocAsync(&ptr, bytes, res_.stream));
    size = bytes;
  }
  *out = ptr;
  return ok_status();
}

// Makes sure value v has a device copy (copies a host step's result up).
Status CudaContext::ensure_device(int32_t v) {
  if (dev_[v].present()) return ok_status();
  const Tensor& h = host_[v];
  if (h.empty()) return internal_error("value '" + plan().values[v].name + "' was not computed");
  ops::TensorRef r{h.dtype(), h.dims(), nullptr};
  SRT_ASSIGN_OR_RETURN(const uint64_t bytes, stored_bytes(v, r.dims));
  SRT_RETURN_IF_ERROR(device_slot(v, bytes, &r.data));
  if (skip_uploads_) {
    skipped_uploads_.push_back(v);  // a replayed graph makes this copy
  } else {
    if (bytes) SRT_CUDA(cudaMemcpyAsync(r.data, h.data(), bytes, cudaMemcpyHostToDevice, res_.stream));
    if (capturing_) captured_uploads_.push_back(v);  // done only if the capture is replayed
  }
  dev_[v] = r;
  return ok_status();
}

Status CudaContext::run_host_step(size_t index) {
  const ir::Node& step = plan().steps[index];
  std::vector<ops::TensorInfo> infos(step.inputs.size());
  std::vector<ops::TensorRef> in_refs(step.inputs.size());
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    int32_t v = step.inputs[k];
    if (v < 0) continue;
    if (host_[v].empty() && dev_[v].present() && reads_dims_only(step, k)) {
      // Shape / Size of a device tensor: its dims are enough, no copy (and no sync: capturable).
      infos[k] = {dev_[v].dtype, dev_[v].dims, true, nullptr};
      in_refs[k] = {dev_[v].dtype, dev_[v].dims, nullptr};
      continue;
    }
    SRT_RETURN_IF_ERROR(ensure_host(v));
    const Tensor& h = host_[v];
    infos[k] = {h.dtype(), h.dims(), true, &h};
    in_refs[k] = {h.dtype(), h.dims(), const_cast<void*>(h.data())};
  }
  SRT_ASSIGN_OR_RETURN(auto out_refs, prepare_outputs(index, std::move(infos), [this](int32_t v, uint64_t b, void** o) {
                         SRT_RETURN_IF_ERROR(host_buffers_[v].reserve(b + 64));
                         *o = host_buffers_[v].data;
                         return ok_status();
                       }));
  ops::KernelContext kctx(step, in_refs, out_refs);
  SRT_RETURN_IF_ERROR(es_->schemas[index]->cpu(kctx));
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    int32_t v = step.outputs[k];
    if (v < 0) continue;
    host_[v] = Tensor::view(out_refs[k].dtype, out_refs[k].dims, out_refs[k].data, nullptr);
    dev_[v] = ops::TensorRef{};
    output_dims_[v] = out_refs[k].dims;
    if (plan().values[v].kind == ValueEntry::Kind::kOutput) SRT_RETURN_IF_ERROR(ensure_device(v));
  }
  return ok_status();
}

Result<CudaContext::Prepared> CudaContext::prepare_device_step(size_t index, bool upload) {
  const ir::Node& step = plan().steps[index];
  const auto& shape_inputs = es_->schemas[index]->shape_inputs;
  Prepared p;
  std::vector<ops::TensorInfo> infos(step.inputs.size());
  p.in.resize(step.inputs.size());
  p.host_values.assign(step.inputs.size(), nullptr);
  const bool skip = skip_uploads_;
  skip_uploads_ = !upload;
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    int32_t v = step.inputs[k];
    if (v < 0) continue;
    bool is_shape = std::find(shape_inputs.begin(), shape_inputs.end(), static_cast<int>(k)) != shape_inputs.end();
    if (is_shape) {
      if (host_[v].empty()) p.needs_download = true;
      if (host_[v].empty() && !upload) continue;  // peeking: no download (the step is not capturable)
      Status st = ensure_host(v);
      if (!st.ok()) return skip_uploads_ = skip, st;
      p.host_values[k] = &host_[v];
    }
    Status st = ensure_device(v);
    if (!st.ok()) return skip_uploads_ = skip, st;
    p.in[k] = dev_[v];
    infos[k] = {dev_[v].dtype, dev_[v].dims, true, host_[v].empty() ? nullptr : &host_[v]};
  }
  skip_uploads_ = skip;
  if (p.needs_download && !upload) return p;
  SRT_ASSIGN_OR_RETURN(p.out, prepare_outputs(index, std::move(infos), [this](int32_t v, uint64_t b, void** o) {
                         return device_slot(v, b, o);
                       }));
  return p;
}

void CudaContext::commit_outputs(size_t index, const Prepared& p) {
  const ir::Node& step = plan().steps[index];
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    int32_t v = step.outputs[k];
    if (v < 0) continue;
    dev_[v] = p.out[k];
    host_[v] = Tensor();
    output_dims_[v] = p.out[k].dims;
  }
}

Status CudaContext::run_device_step(size_t index, std::vector<int64_t>* sig) {
  const ir::Node& step = plan().steps[index];
  SRT_RETURN_IF_ERROR(streamer_.before_step(index, res_.stream, dev_));
  SRT_ASSIGN_OR_RETURN(Prepared p, prepare_device_step(index, true));
  if (sig) *sig = signature(index, p);
  // Streamed weights of this step are pointed at their slot (after their copy) above.
  CudaKernelContext kctx(step, p.in, p.out, p.host_values, res_);
  // An aliased view (its output on its input's bytes) enqueues nothing: timed, it would show the
  // events' own gap (~1.4 us a step: 4-7 % of a transformer prefill's per-op table) and give the
  // residency planner a cost that is not there. (Asked only while profiling: runs pay nothing.)
  const bool timed = !capturing_ && profiler_.enabled() &&
                     !(!p.in.empty() && !p.out.empty() && p.in[0].data == p.out[0].data && plan::is_view_step(step));
  if (timed) profiler_.begin(index, res_.stream);
  SRT_RETURN_IF_ERROR(ces_.kernels[index](kctx));
  if (timed)
    profiler_.end(index, step.op_type + " " + dims_to_string(p.out.empty() ? Dims{} : p.out[0].dims), res_.stream);
  SRT_RETURN_IF_ERROR(streamer_.after_step(index, res_.stream));
  commit_outputs(index, p);
  return ok_status();
}

Status CudaContext::run_steps() {
  log_verbose("engine '" + plan().name + "': run" + (capturing_ ? " (capturing)" : ""));
  const RunOptionsScope options(es_->options);  // for the kernels that read them (attention.cu)
  bind();
  SRT_RETURN_IF_ERROR(streamer_.begin_run(res_.stream, capturing_));
  for (size_t i = 0; i < plan().steps.size(); ++i) {
    Status st = ces_.host_step[i] ? run_host_step(i) : run_device_step(i);
    if (!st.ok()) return st.with_context("engine '" + plan().name + "' step " + std::to_string(i));
  }
  return streamer_.end_run(res_.stream);
}

Status CudaContext::enqueue(void* stream) {
  res_.stream = stream ? static_cast<cudaStream_t>(stream) : own_stream_;
  invalidate_outputs();
  graph_stats_ = CudaGraphStats{};
  SRT_RETURN_IF_ERROR(check_bindings());
  SRT_RETURN_IF_ERROR(graph_enabled_ ? run_graphed() : run_steps());
  have_outputs_ = true;
  return ok_status();
}

}  // namespace streamrt::cuda
