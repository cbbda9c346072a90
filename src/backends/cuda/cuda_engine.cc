#include "backends/cuda/cuda_engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/host_memory.h"
#include "core/logging.h"

namespace streamrt::cuda {

CudaEngineState::~CudaEngineState() {
  if (reservation.block) cudaFree(reservation.block);
  if (reservation.workspace) cudaFree(reservation.workspace);
  if (reservation.cublaslt) cublasLtDestroy(reservation.cublaslt);
  if (reservation.cudnn) cudnnDestroy(reservation.cudnn);
  if (fixed) cudaFree(fixed);
  if (resident) cudaFree(resident);
  if (pinned) cudaFreeHost(pinned);
  if (registered) cudaHostUnregister(registered);
}

bool reads_dims_only(const ir::Node& step, size_t input) {
  const ops::OpSchema* s = ops::schema_of(step);
  return s && ops::lists_input(s->dims_only_inputs, input);
}

namespace {

// Weights some device step reads.
std::vector<uint8_t> device_weights(const EngineState& es, const CudaEngineState& ces) {
  const plan::PlanData& p = es.plan.data;
  std::vector<uint8_t> used(p.weights.size(), 0);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    if (ces.host_step[s]) continue;
    for (int32_t v : p.steps[s].inputs)
      if (v >= 0 && p.values[v].kind == plan::ValueEntry::Kind::kWeight) used[p.values[v].weight_index] = 1;
  }
  return used;
}

// One device block for the weights in `which` and the `prefix` bytes of others (may be null);
// fills weight_dev and prefix_dev for them.
Status upload_block(const EngineState& es, CudaEngineState& ces, const std::vector<uint8_t>& which, void** block,
                    uint64_t* bytes, const std::vector<uint64_t>* prefix = nullptr) {
  const plan::PlanData& p = es.plan.data;
  auto prefix_of = [&](size_t i) { return prefix && i < prefix->size() && !which[i] ? (*prefix)[i] : 0; };
  uint64_t total = 0;
  for (size_t i = 0; i < p.weights.size(); ++i) total += stream_align(which[i] ? p.weights[i].size : prefix_of(i));
  *bytes = total;
  if (total == 0) return ok_status();
  cudaError_t e = cudaMalloc(block, total);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *block = nullptr;
    return out_of_memory("cudaMalloc of " + std::to_string(total) + " bytes of weights: " + cudaGetErrorString(e));
  }
  uint64_t off = 0;
  for (size_t i = 0; i < p.weights.size(); ++i) {
    const uint64_t n = which[i] ? p.weights[i].size : prefix_of(i);
    if (!which[i] && !n) continue;
    void* dst = static_cast<uint8_t*>(*block) + off;
    (which[i] ? ces.weight_dev : ces.prefix_dev)[i] = dst;
    const void* src = ces.host_src.empty() || !ces.host_src[i] ? p.weight_data[i].data() : ces.host_src[i];
    if (n) SRT_CUDA(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
    off += stream_align(n);
  }
  return ok_status();
}

// A timing engine's streamed weights (never copied: its steps read their zeroed slots) point at one
// block of pinned zeros as large as the largest, which tables read in place map; no host copy of
// the weights is made.
Status pin_placeholder(const EngineState& es, CudaEngineState& ces) {
  const plan::PlanData& p = es.plan.data;
  uint64_t largest = 0;
  for (const auto& w : p.weights)
    if (w.streamable) largest = std::max(largest, w.size);
  SRT_CUDA(cudaHostAlloc(&ces.pinned, std::max<uint64_t>(largest, 1), cudaHostAllocPortable));
  std::memset(ces.pinned, 0, largest);
  for (size_t i = 0; i < p.weights.size(); ++i)
    if (p.weights[i].streamable) ces.host_src[i] = ces.pinned;
  return ok_status();
}

// Streamable weights held apart from the plan (a loader's memory, e.g. an ExecuTorch .ptd it
// mapped) are page-locked where they are, so that the streamer's copies are asynchronous and the
// process holds one host copy: the pages spanning them are registered (read-only where the
// device supports it; the mapping may be). False when there is nothing to register or the driver
// refuses (then they are copied into pinned memory like a plan file's).
bool register_external(const EngineState& es, CudaEngineState& ces) {
  const plan::LoadedPlan& lp = es.plan;
  if (!lp.external_weights || es.placeholder_streamed_weights) return false;
  const plan::PlanData& p = lp.data;
  uintptr_t begin = UINTPTR_MAX, end = 0;
  for (size_t i = 0; i < p.weights.size(); ++i) {
    if (!p.weights[i].streamable || !p.weights[i].size) continue;
    const auto a = reinterpret_cast<uintptr_t>(p.weight_data[i].data());
    begin = std::min(begin, a);
    end = std::max(end, a + p.weights[i].size);
  }
  if (begin >= end) return false;
  // Whole pages: a page holding any byte of the range is mapped in full.
  const long page_size = sysconf(_SC_PAGESIZE);
  const uintptr_t page = page_size > 0 ? static_cast<uintptr_t>(page_size) : 4096;
  begin &= ~(page - 1);
  end = (end + page - 1) & ~(page - 1);
  int read_only = 0;
  if (cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, ces.device) != cudaSuccess)
    read_only = 0;
  const unsigned flags = cudaHostRegisterPortable | cudaHostRegisterMapped | (read_only ? cudaHostRegisterReadOnly : 0u);
  void* base = reinterpret_cast<void*>(begin);
  const cudaError_t e = cudaHostRegister(base, end - begin, flags);
  if (e != cudaSuccess) {
    cudaGetLastError();
    log_info("engine '" + p.name + "': registering its " + std::to_string(end - begin) +
             " bytes of streamable weights held apart with CUDA failed (" + cudaGetErrorString(e) +
             "); copying them into pinned memory");
    return false;
  }
  ces.registered = base;
  for (size_t i = 0; i < p.weights.size(); ++i)
    if (p.weights[i].streamable) ces.host_src[i] = p.weight_data[i].data();
  log_verbose("engine '" + p.name + "': " + std::to_string(end - begin) + " bytes of streamable weights registered in place" +
              (read_only ? " (read-only)" : ""));
  return true;
}

// Copies the streamable weights into one pinned host block (chunked; the mapped plan's pages are
// released behind the copy, so resident memory grows by the weights once, not twice).
Status pin_streamable(const EngineState& es, CudaEngineState& ces) {
  const plan::PlanData& p = es.plan.data;
  uint64_t total = 0;
  for (const auto& w : p.weights)
    if (w.streamable) total += stream_align(w.size);
  if (total == 0) return ok_status();
  if (es.placeholder_streamed_weights) return pin_placeholder(es, ces);
  if (register_external(es, ces)) return ok_status();
  cudaError_t e = cudaHostAlloc(&ces.pinned, total, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    cudaGetLastError();
    ces.pinned = nullptr;
    return out_of_memory("pinned host memory of " + std::to_string(total) + " bytes for streamable weights: " +
                         cudaGetErrorString(e));
  }
  constexpr uint64_t kChunk = 16ull << 20;
  uint64_t off = 0;
  for (size_t i = 0; i < p.weights.size(); ++i) {
    if (!p.weights[i].streamable) continue;
    auto* dst = static_cast<uint8_t*>(ces.pinned) + off;
    const auto* src = static_cast<const uint8_t*>(p.weight_data[i].data());
    for (uint64_t done = 0; done < p.weights[i].size; done += kChunk) {
      uint64_t n = std::min(kChunk, p.weights[i].size - done);
      std::memcpy(dst + done, src + done, n);
      if (es.plan.file_backed)
        release_pages(es.plan.base, es.plan.file_size, static_cast<uint64_t>(src + done - es.plan.base), n);
    }
    ces.host_src[i] = dst;
    off += stream_align(p.weights[i].size);
  }
  log_verbose("engine '" + p.name + "': " + std::to_string(total) + " bytes of streamable weights in pinned memory");
  return ok_status();
}

// Host-to-device bandwidth of pinned copies, measured once per process.
double measured_h2d_bandwidth() {
  static const double bw = [] {
    const size_t n = 64u << 20;
    void *h = nullptr, *d = nullptr;
    double result = 25e9;  // PCIe 4 x16 if the measurement fails
    cudaEvent_t a = nullptr, b = nullptr;
    if (cudaMallocHost(&h, n) == cudaSuccess && cudaMalloc(&d, n) == cudaSuccess &&
        cudaEventCreate(&a) == cudaSuccess && cudaEventCreate(&b) == cudaSuccess) {
      std::memset(h, 1, n);
      cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);  // warm-up
      cudaEventRecord(a);
      for (int i = 0; i < 4; ++i) cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice);
      cudaEventRecord(b);
      float ms = 0;
      if (cudaEventSynchronize(b) == cudaSuccess && cudaEventElapsedTime(&ms, a, b) == cudaSuccess && ms > 0)
        result = 4.0 * n / (ms * 1e-3);
    }
    cudaGetLastError();
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
    if (h) cudaFreeHost(h);
    if (d) cudaFree(d);
    log_verbose("pinned host-to-device bandwidth: " + std::to_string(result / 1e9) + " GB/s");
    return result;
  }();
  return bw;
}

}  // namespace

DeviceProfile cuda_profile() {
  DeviceProfile d;
  d.flops_fp32 = 40e12;  // no TF32
  d.flops_half = 500e12;
  d.memory_bandwidth = 3e12;
  d.step_overhead_s = 4e-6;
  d.stream_bandwidth = measured_h2d_bandwidth();
  d.copy_latency_s = 8e-6;
  return d;
}

void place_steps(const EngineState& es, CudaEngineState& ces, std::vector<std::string>* fallbacks) {
  const plan::PlanData& p = es.plan.data;
  const size_t ns = p.steps.size();
  std::vector<uint8_t> shape_value(p.values.size(), 0);
  ces.host_step.assign(ns, 0);
  ces.kernels.assign(ns, nullptr);
  // Backwards: a value read as a shape makes its producer a host step, and that step's
  // inputs shape values in turn.
  for (size_t s = ns; s-- > 0;) {
    const ir::Node& step = p.steps[s];
    for (int k : es.schemas[s]->shape_inputs)
      if (k < static_cast<int>(step.inputs.size()) && step.inputs[k] >= 0) shape_value[step.inputs[k]] = 1;
    bool host = false;
    for (int32_t out : step.outputs)
      if (out >= 0 && shape_value[out]) host = true;
    if (!host) continue;
    ces.host_step[s] = 1;
    for (size_t k = 0; k < step.inputs.size(); ++k)
      if (step.inputs[k] >= 0 && !reads_dims_only(step, k)) shape_value[step.inputs[k]] = 1;
  }
  for (size_t s = 0; s < ns; ++s) {
    if (ces.host_step[s]) continue;
    const ir::Node& step = p.steps[s];
    const DataType main = ops::main_dtype(*es.schemas[s], step, [&](int32_t v) { return p.values[v].dtype; });
    std::string why;
    ces.kernels[s] = cuda_kernel_for(step, main, &why);
    if (!ces.kernels[s]) {  // decided here, at load: the step runs its CPU kernel on host copies
      ces.host_step[s] = 1;
      if (fallbacks) fallbacks->push_back(step.op_type + " (" + step.name + "): " + why);
    }
  }
}

Status upload_weights(const EngineState& es, CudaEngineState& ces) {
  const plan::PlanData& p = es.plan.data;
  ces.weight_dev.assign(p.weights.size(), nullptr);
  ces.prefix_dev.assign(p.weights.size(), nullptr);
  ces.host_src.assign(p.weights.size(), nullptr);
  ces.step_streamed.assign(p.steps.size(), {});
  ces.step_slot_offset.assign(p.steps.size(), {});
  if (p.weights_stripped) return ok_status();  // refit uploads them
  std::vector<uint8_t> fixed = device_weights(es, ces);
  for (size_t i = 0; i < p.weights.size(); ++i)
    if (p.weights[i].streamable) fixed[i] = 0;
  SRT_RETURN_IF_ERROR(upload_block(es, ces, fixed, &ces.fixed, &ces.fixed_bytes));
  log_verbose("engine '" + p.name + "': " + std::to_string(ces.fixed_bytes) + " bytes of weights uploaded");
  return pin_streamable(es, ces);
}

ResidencyPlan plan_cuda_residency(const EngineState& es, const CudaEngineState& ces, uint64_t budget) {
  std::vector<uint8_t> device_step(ces.host_step.size());
  for (size_t s = 0; s < device_step.size(); ++s) device_step[s] = !ces.host_step[s];
  ResidencyInput in = residency_input(es.plan.data, cuda_profile(), device_step);
  in.slots = kStreamSlots;
  in.split = true;  // the streamer copies a resident prefix device-to-device
  in.zero_copy = gather_table_weights(es.plan.data, device_step);  // read in place from pinned memory
  return plan_residency(in, budget);
}

Status apply_budget(const EngineState& es, CudaEngineState& ces) {
  const plan::PlanData& p = es.plan.data;
  if (ces.resident) {
    SRT_CUDA(cudaFree(ces.resident));
    ces.resident = nullptr;
  }
  for (size_t i = 0; i < p.weights.size(); ++i)
    if (p.weights[i].streamable) ces.weight_dev[i] = nullptr;
  ces.prefix_dev.assign(p.weights.size(), nullptr);
  ces.residency = plan_cuda_residency(es, ces, es.budget);
  if (p.weights_stripped) return ok_status();  // no weights to place until refit
  SRT_RETURN_IF_ERROR(upload_block(es, ces, ces.residency.resident, &ces.resident, &ces.resident_bytes,
                                   &ces.residency.resident_prefix));
  ces.step_streamed.assign(p.steps.size(), {});
  ces.step_slot_offset.assign(p.steps.size(), {});
  ces.streamed_steps.clear();
  std::vector<uint8_t> streams(p.weights.size(), 0);
  for (size_t i = 0; i < p.weights.size(); ++i) {
    if (!p.weights[i].streamable || ces.residency.resident[i]) continue;
    if (ces.residency.read_in_place[i]) {  // the planner gave it no slot
      // The pinned copy as the device sees it (its own address under UVA).
      if (!ces.host_src[i]) return internal_error("weight '" + p.weights[i].name + "' has no pinned copy to read in place");
      SRT_CUDA(cudaHostGetDevicePointer(&ces.weight_dev[i], const_cast<void*>(ces.host_src[i]), 0));
      continue;
    }
    streams[i] = 1;
  }
  for (size_t s = 0; s < p.steps.size(); ++s) {
    if (ces.host_step[s]) continue;
    uint64_t off = 0;
    for (int32_t v : p.steps[s].inputs) {
      if (v < 0 || p.values[v].kind != plan::ValueEntry::Kind::kWeight) continue;
      int32_t w = p.values[v].weight_index;
      auto& list = ces.step_streamed[s];
      if (!streams[w] || std::find(list.begin(), list.end(), w) != list.end()) continue;
      list.push_back(w);
      ces.step_slot_offset[s].push_back(off);
      off += stream_align(p.weights[w].size);
    }
    if (!ces.step_streamed[s].empty()) ces.streamed_steps.push_back(s);
  }
  ces.slot_bytes = ces.residency.slot_bytes;
  log_verbose("engine '" + p.name + "': budget " + std::to_string(es.budget) + ": " +
              std::to_string(ces.residency.resident_bytes) + " bytes resident, " +
              std::to_string(ces.residency.streamed_bytes) + " streamed per run in " +
              std::to_string(ces.streamed_steps.size()) + " steps, slot " + std::to_string(ces.slot_bytes));
  return ok_status();
}

Status reserve_context_memory(const EngineState& es, CudaEngineState& ces) {
  ContextReservation& r = ces.reservation;
  if (r.taken.load()) return internal_error("the context reservation is in use");
  if (r.block) {
    SRT_CUDA(cudaFree(r.block));
    r.block = nullptr;
  }
  r.arena = stream_align(es.plan.data.arena_size);
  r.scratch = stream_align(ces.scratch_bytes());
  Status st = ok_status();
  if (r.arena + r.scratch) st = cuda_status(cudaMalloc(&r.block, r.arena + r.scratch), "context memory");
  if (st.ok() && !r.workspace) {
    st = cuda_status(cudaMalloc(&r.workspace, kContextWorkspace), "context workspace");
    r.workspace_size = st.ok() ? kContextWorkspace : 0;
  }
  if (st.ok() && !r.cublaslt) st = cublas_status(cublasLtCreate(&r.cublaslt), "cublasLtCreate");
  if (st.ok() && !r.cudnn) st = cudnn_status(cudnnCreate(&r.cudnn), "cudnnCreate");
  if (st.ok()) return st;
  cudaGetLastError();
  if (r.block) cudaFree(r.block);
  r.block = nullptr;
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  cudaGetLastError();
  return out_of_memory("an execution context needs " + std::to_string(r.bytes()) + " bytes of device memory (" +
                       std::to_string(r.arena) + " activations, " + std::to_string(r.scratch) +
                       " weight-streaming scratch, " + std::to_string(kContextWorkspace + kContextHandles) +
                       " workspace and library handles); " + std::to_string(free) + " bytes are free (" +
                       st.message() + ")");
}

bool take_reservation(const CudaEngineState& ces, uint64_t arena, uint64_t scratch) {
  ContextReservation& r = ces.reservation;  // mutable: contexts take it from a const engine
  // Made for the budget in force (budgets change only without contexts), so the sizes match.
  if (r.arena < arena || r.scratch < scratch || !r.cublaslt || !r.cudnn) return false;
  bool expected = false;
  return r.taken.compare_exchange_strong(expected, true);
}

void return_reservation(const CudaEngineState& ces, const CudaResources& used) {
  ContextReservation& r = ces.reservation;
  r.cublaslt = used.cublaslt;
  r.cudnn = used.cudnn;
  r.workspace = used.workspace;
  r.workspace_size = used.workspace_size;
  r.taken.store(false);
}

}  // namespace streamrt::cuda
