// Device backends (CPU, CUDA) behind the runtime. A backend registers itself at static-init
// time; the CUDA one exists only in builds with CUDA, and is available only with a GPU.
#pragma once

#include <memory>
#include <vector>

#include "plan/plan.h"
#include "runtime/engine_state.h"
#include "runtime/residency_planner.h"
#include "streamrt/runtime.h"

namespace streamrt {

// One execution context's behaviour; ExecutionContext forwards to it.
class ContextImpl {
 public:
  virtual ~ContextImpl() = default;
  virtual Status set_input_shape(const std::string& name, const Dims& dims) = 0;
  virtual Status set_tensor_address(const std::string& name, void* data, size_t capacity) = 0;
  virtual Result<Dims> tensor_shape(const std::string& name) const = 0;
  virtual Status set_sequence_input(const std::string& name, const SequenceValue& value) = 0;
  virtual Result<SequenceValue> sequence_output(const std::string& name) const = 0;
  // Enqueues the work on `stream` (device stream, or null) and returns; execute() = enqueue + wait.
  virtual Status enqueue(void* stream) = 0;
  virtual Status synchronize(void* stream) = 0;
  // CUDA graph capture and replay of runs (kUnsupported where the device has no graphs).
  virtual Status set_cuda_graph(bool enable) {
    return enable ? unsupported("CUDA graphs need the CUDA device") : ok_status();
  }
  virtual Result<CudaGraphStats> last_run_graph_stats() const { return unsupported("CUDA graphs need the CUDA device"); }
  virtual void set_streaming_profiling(bool) {}
  virtual Result<StreamingStats> last_run_stats() const { return StreamingStats{}; }
  virtual void set_step_timing(bool) {}
  virtual Result<std::vector<double>> last_step_times_ms() const {
    return unsupported("per-step timing needs the CUDA device");
  }
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual DeviceType type() const = 0;
  // OK when the device can be used now (a GPU is present, the driver answers).
  virtual Status available() const = 0;
  // Applies the process-wide device settings of `options` (Runtime::create).
  virtual Status configure(const RuntimeOptions&) { return ok_status(); }
  // The device an engine built now would target (name, compute capability).
  virtual plan::DeviceInfo info() const = 0;
  // Checks the plan fits this device (kIncompatible otherwise) and prepares per-engine
  // device state (e.g. weights uploaded), stored in es.device_state.
  virtual Status prepare_engine(EngineState& es) = 0;
  virtual Result<std::unique_ptr<ContextImpl>> create_context(std::shared_ptr<const Engine> engine) = 0;
  // Weight streaming: applies es.budget (resident set, device copies); kOutOfMemory when the
  // resident weights do not fit. Called with no context alive.
  virtual Status apply_weight_budget(EngineState&) { return ok_status(); }
  // Refit: es.plan.data.weight_data[i] (and es.graph's constants) hold new values for every i in
  // `changed`; refresh whatever the backend keeps of them (device copies, streamed copies).
  // Called with no context alive; a stripped engine may still miss weights
  // (es.plan.data.weights_stripped). The CPU reads weight_data at each run: nothing to do.
  virtual Status refit_weights(EngineState&, const std::vector<int32_t>& /*changed*/) { return ok_status(); }
  // Which streamable weights would stay resident at `budget`, with this device's step
  // estimates; scratch per context = stream_slots() x slot_bytes when anything streams.
  virtual ResidencyPlan residency(const EngineState&, uint64_t /*budget*/) const { return {}; }
  virtual int stream_slots() const { return 0; }
  // Whether contexts time their steps (ContextImpl::last_step_times_ms) and prepare_engine honours
  // EngineState::placeholder_streamed_weights.
  virtual bool supports_step_timing() const { return false; }
  // Bytes of device memory free now (for the automatic budget).
  virtual uint64_t free_memory() const = 0;
  // The memory contract (Engine::minimum_device_memory): device bytes of the engine's weights
  // that never stream, and what a context takes beyond its arena and scratch (workspace, handles).
  virtual uint64_t fixed_memory(const EngineState& es) const = 0;
  virtual uint64_t context_overhead() const { return 0; }
  // Sets aside one context's memory at the budget in force (after each budget change, with no
  // context alive), so that a loaded engine can always run; kOutOfMemory when it does not fit.
  // reserved_memory: the bytes so held and not taken by a context (free to a new budget).
  virtual Status reserve_context_memory(EngineState&) { return ok_status(); }
  virtual uint64_t reserved_memory(const EngineState&) const { return 0; }
  // Plain memory on the device, for DeviceBuffer (tools, tests, users without their own).
  virtual Result<void*> allocate(size_t bytes) = 0;
  virtual void free(void* ptr) = 0;
  // Synchronous copies between host and this device.
  virtual Status copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual Status copy_to_host(void* dst, const void* src, size_t bytes) = 0;
};

// Registers a backend (called from a static initializer); a second one of a type is ignored.
void register_device_backend(DeviceBackend* backend);
DeviceBackend* find_device_backend(DeviceType type);

}  // namespace streamrt
