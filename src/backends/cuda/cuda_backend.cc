// The CUDA device backend: registered when streamrt is built with CUDA, available when a GPU
// answers.
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_refit.h"
#include "backends/cuda/kernel_image.h"
#include "core/byte_size.h"
#include "core/logging.h"

namespace streamrt::cuda {
namespace {

class CudaBackend final : public DeviceBackend {
 public:
  DeviceType type() const override { return DeviceType::kCuda; }

  Status available() const override {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
      cudaGetLastError();  // clear the sticky "no device" error
      return unsupported(std::string("no CUDA device is available (") +
                         (e == cudaSuccess ? "none found" : cudaGetErrorString(e)) + ")");
    }
    return check_kernel_image();
  }

  Status configure(const RuntimeOptions& options) override {
    const size_t want = options.cuda_thread_stack_bytes;
    size_t now = 0;
    SRT_CUDA(cudaDeviceGetLimit(&now, cudaLimitStackSize));
    if (want > 0 && want < now) SRT_CUDA(cudaDeviceSetLimit(cudaLimitStackSize, want));
    return ok_status();
  }

  plan::DeviceInfo info() const override {
    cudaDeviceProp prop{};
    int dev = 0;
    cudaGetDevice(&dev);
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return {plan::DeviceKind::kCuda, 0, 0, "unknown"};
    return {plan::DeviceKind::kCuda, prop.major, prop.minor, prop.name};
  }

  Status prepare_engine(EngineState& es) override {
    plan::DeviceInfo here = info();
    const plan::DeviceInfo& built = es.plan.data.device;
    if (built.cc_major != here.cc_major || built.cc_minor != here.cc_minor)
      return incompatible("plan built for sm_" + std::to_string(built.cc_major) + std::to_string(built.cc_minor) +
                          " (" + built.name + "); this GPU is sm_" + std::to_string(here.cc_major) +
                          std::to_string(here.cc_minor) + " (" + here.name + ")");
    auto ces = std::make_shared<CudaEngineState>();
    SRT_CUDA(cudaGetDevice(&ces->device));
    std::vector<std::string> fallbacks;
    place_steps(es, *ces, &fallbacks);
    if (!fallbacks.empty()) {
      std::string list;
      for (const auto& f : fallbacks) list += (list.empty() ? "" : ", ") + f;
      log_warning("engine '" + es.plan.data.name + "': steps running on the host: " + list);
    }
    es.device_state = ces;  // first: a failed upload still reports its size (the memory contract)
    return upload_weights(es, *ces);
  }

  Status apply_weight_budget(EngineState& es) override {
    return apply_budget(es, *static_cast<CudaEngineState*>(es.device_state.get()));
  }
  Status refit_weights(EngineState& es, const std::vector<int32_t>& changed) override {
    return cuda::refit_weights(es, changed);
  }
  ResidencyPlan residency(const EngineState& es, uint64_t budget) const override {
    return plan_cuda_residency(es, *static_cast<const CudaEngineState*>(es.device_state.get()), budget);
  }
  int stream_slots() const override { return kStreamSlots; }
  uint64_t fixed_memory(const EngineState& es) const override {
    return static_cast<const CudaEngineState*>(es.device_state.get())->fixed_bytes;
  }
  uint64_t context_overhead() const override { return kContextWorkspace + kContextHandles; }
  Status reserve_context_memory(EngineState& es) override {
    return cuda::reserve_context_memory(es, *static_cast<CudaEngineState*>(es.device_state.get()));
  }
  uint64_t reserved_memory(const EngineState& es) const override {
    const ContextReservation& r = static_cast<const CudaEngineState*>(es.device_state.get())->reservation;
    if (r.taken.load()) return 0;
    return (r.block ? r.arena + r.scratch : 0) + r.workspace_size + (r.cublaslt ? kContextHandles : 0);
  }
  bool supports_step_timing() const override { return true; }

  Result<std::unique_ptr<ContextImpl>> create_context(std::shared_ptr<const Engine> engine) override {
    auto* ces = static_cast<const CudaEngineState*>(engine->state().device_state.get());
    auto ctx = std::make_unique<CudaContext>(std::move(engine), *ces);
    if (Status st = ctx->init(); !st.ok()) {
      cudaGetLastError();  // a failed allocation must not surface again at a later kernel launch
      return st;
    }
    return std::unique_ptr<ContextImpl>(std::move(ctx));
  }
  Result<void*> allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1); e != cudaSuccess) {
      cudaGetLastError();  // not sticky: later launches must not see it
      const uint64_t free_now = free_memory();
      const std::string what = "device buffer of " + format_bytes(bytes) + " (" + format_bytes(free_now) + " free)";
      if (e == cudaErrorMemoryAllocation) return out_of_memory(what + ": out of memory");
      return device_error(what + ": " + cudaGetErrorString(e));
    }
    return p;
  }
  void free(void* ptr) override { cudaFree(ptr); }
  uint64_t free_memory() const override {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return free;
  }
  Status copy_to_device(void* dst, const void* src, size_t bytes) override {
    if (!bytes) return ok_status();
    SRT_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return once the bytes are staged, before the DMA lands;
    // a context's non-blocking stream does not wait for the legacy stream, so wait here: the
    // buffer is complete for every stream once this returns.
    SRT_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
    return ok_status();
  }
  Status copy_to_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) SRT_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return ok_status();
  }
};

struct Registrar {
  Registrar() { register_device_backend(new CudaBackend()); }
} registrar;

}  // namespace
}  // namespace streamrt::cuda
