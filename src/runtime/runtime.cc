#include "streamrt/runtime.h"

#include "core/byte_size.h"
#include "core/capacity_layout.h"
#include "core/guard.h"
#include "core/logging.h"
#include "runtime/device_backend.h"
#include "runtime/timing_engine.h"

namespace streamrt {

const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kSimple: return "simple";
    case AttentionKernel::kMma: return "mma";
    case AttentionKernel::kWgmma: return "wgmma";
    default: return "auto";
  }
}

Result<AttentionKernel> parse_attention_kernel(const std::string& s) {
  if (s == "auto") return AttentionKernel::kAuto;
  if (s == "simple") return AttentionKernel::kSimple;
  if (s == "mma") return AttentionKernel::kMma;
  if (s == "wgmma") return AttentionKernel::kWgmma;
  return invalid_argument("unknown attention kernel '" + s + "' (expected auto, simple, mma or wgmma)");
}

const char* group_gemm_kernel_name(GroupGemmKernel k) {
  switch (k) {
    case GroupGemmKernel::kCublasLt: return "cublaslt";
    case GroupGemmKernel::kGroup: return "group";
    default: return "auto";
  }
}

Result<GroupGemmKernel> parse_group_gemm_kernel(const std::string& s) {
  if (s == "auto") return GroupGemmKernel::kAuto;
  if (s == "cublaslt") return GroupGemmKernel::kCublasLt;
  if (s == "group") return GroupGemmKernel::kGroup;
  return invalid_argument("unknown group GEMM kernel '" + s + "' (expected auto, cublaslt or group)");
}

Result<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  return guard("Runtime::create", [&]() -> Result<std::unique_ptr<Runtime>> {
    DeviceBackend* cuda = find_device_backend(DeviceType::kCuda);
    DeviceType device = options.device.value_or(cuda && cuda->available().ok() ? DeviceType::kCuda
                                                                               : DeviceType::kCpu);
    DeviceBackend* backend = find_device_backend(device);
    if (!backend)
      return unsupported(std::string("this build of streamrt has no ") + device_type_name(device) + " backend");
    SRT_RETURN_IF_ERROR(backend->available());
    SRT_RETURN_IF_ERROR(backend->configure(options));
    return std::unique_ptr<Runtime>(new Runtime(device, options));
  });
}

namespace {

// Kept free by the automatic budget beyond the contract (allocator granularity, a kernel's
// workspace growing past the context's initial one, other libraries in the process).
constexpr uint64_t kAutoBudgetMargin = 64ull << 20;

// Device bytes each context needs for streamed weights at `budget`.
uint64_t scratch_at(const EngineState& es, uint64_t budget) {
  const DeviceBackend* b = find_device_backend(es.device);
  ResidencyPlan rp = b->residency(es, budget);
  return rp.streamed_bytes > 0 ? static_cast<uint64_t>(b->stream_slots()) * rp.slot_bytes : 0;
}

// Applies es.budget on the device, records the scratch it implies and sets one context's memory
// aside (the contract: a loaded engine always runs).
Status apply_budget(EngineState& es) {
  DeviceBackend* b = find_device_backend(es.device);
  SRT_RETURN_IF_ERROR(b->apply_weight_budget(es));
  es.scratch_bytes = scratch_at(es, es.budget);
  return b->reserve_context_memory(es);
}

// One context's needs beyond the weights: activations, scratch at `budget`, workspace and handles.
uint64_t context_memory(const EngineState& es, uint64_t budget) {
  return es.plan.data.arena_size + scratch_at(es, budget) + find_device_backend(es.device)->context_overhead();
}

uint64_t minimum_memory(const EngineState& es) {
  return find_device_backend(es.device)->fixed_memory(es) + context_memory(es, 0);
}

uint64_t automatic_budget(const EngineState& es) {
  if (es.streamable_bytes == 0) return 0;
  const DeviceBackend* b = find_device_backend(es.device);
  // Non-streamable weights are in device memory once the engine is prepared, so what is free
  // now already excludes them. Scratch at budget 0 is the most any budget needs.
  uint64_t need = context_memory(es, 0) + kAutoBudgetMargin;
  // Weights resident now and the context reservation count as available to the new budget.
  uint64_t free = b->free_memory() + std::min(es.budget, es.streamable_bytes) + b->reserved_memory(es);
  uint64_t avail = free > need ? free - need : 0;
  return std::min(avail, es.streamable_bytes);
}

// Loading failed for lack of memory even at budget 0: say how much the engine needs and how much
// the device has free.
Status does_not_fit(const EngineState& es, const Status& cause) {
  const DeviceBackend* b = find_device_backend(es.device);
  return out_of_memory("engine '" + es.plan.data.name + "' does not fit on the " + device_type_name(es.device) +
                       " device: it needs at least " + format_bytes(minimum_memory(es)) + " (" +
                       format_bytes(b->fixed_memory(es)) + " of weights that never stream, " +
                       format_bytes(context_memory(es, 0)) + " for one execution context at budget 0), " +
                       format_bytes(b->free_memory() + b->reserved_memory(es)) + " are free (" + cause.message() +
                       ")");
}

// After load the budget is the automatic one; if applying it fails for lack of memory (another
// process took memory meanwhile), streamrt retries with budget 0, and fails naming the memory
// needed and free if even that does not fit.
Status apply_initial_budget(EngineState& es) {
  if (es.streamable_bytes == 0) {
    Status st = find_device_backend(es.device)->reserve_context_memory(es);
    return st.ok() || st.code() != StatusCode::kOutOfMemory ? st : does_not_fit(es, st);
  }
  es.budget = automatic_budget(es);
  Status st = apply_budget(es);
  if (st.ok() || st.code() != StatusCode::kOutOfMemory) return st;
  if (es.budget != 0) {
    log_warning("engine '" + es.plan.data.name + "': automatic weight-streaming budget " +
                format_bytes(es.budget) + " did not fit (" + st.message() + "); streaming every streamable weight");
    es.budget = 0;
    st = apply_budget(es);
  }
  return st.ok() || st.code() != StatusCode::kOutOfMemory ? st : does_not_fit(es, st);
}

Result<std::unique_ptr<EngineState>> make_state(plan::LoadedPlan loaded, DeviceType device,
                                                const RuntimeOptions& options, bool timing = false) {
  auto st = std::make_unique<EngineState>();
  st->options = options;
  const plan::PlanData& p = loaded.data;
  DeviceType plan_device = p.device.kind == plan::DeviceKind::kCuda ? DeviceType::kCuda : DeviceType::kCpu;
  if (plan_device != device)
    return incompatible("plan '" + p.name + "' was built for " + device_type_name(plan_device) +
                        ", this runtime runs on " + device_type_name(device));
  for (const ir::Node& step : p.steps) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(step.op_type, step.domain);
    if (!s || !s->cpu)
      return incompatible("plan step " + step.describe() + " uses an op this streamrt does not have");
    st->schemas.push_back(s);
  }
  st->graph = plan::step_graph(p);
  for (const auto& io : p.inputs) st->io_index[io.name] = io.value;
  for (const auto& io : p.outputs) st->io_index[io.name] = io.value;
  st->device = device;
  for (const auto& w : p.weights)
    if (w.streamable) st->streamable_bytes += w.size;
  st->plan = std::move(loaded);
  st->placeholder_streamed_weights = timing;
  log_verbose("engine '" + st->plan.data.name + "': plan verified, preparing the device");
  Status prepared = find_device_backend(device)->prepare_engine(*st);
  if (prepared.code() == StatusCode::kOutOfMemory && st->device_state) return does_not_fit(*st, prepared);
  SRT_RETURN_IF_ERROR(prepared);
  // A timing engine streams everything: the least device memory, as a model larger than the GPU needs.
  SRT_RETURN_IF_ERROR(timing ? apply_budget(*st) : apply_initial_budget(*st));
  log_verbose("engine '" + st->plan.data.name + "': loaded");
  return st;
}

}  // namespace

Result<std::shared_ptr<Engine>> Runtime::load_engine(const std::string& plan_path) {
  return guard([&] { return "loading plan '" + plan_path + "'"; }, [&]() -> Result<std::shared_ptr<Engine>> {
    auto loaded = plan::read_plan(plan_path);  // its errors name the file
    if (!loaded.ok()) return loaded.status();
    auto st = make_state(std::move(loaded).value(), device_, options_);
    if (!st.ok()) return st.status().with_context(plan_path);
    return std::shared_ptr<Engine>(new Engine(std::move(st).value()));
  });
}

Result<std::shared_ptr<Engine>> Runtime::load_engine_bytes(std::vector<uint8_t> bytes) {
  return guard("loading a plan from memory", [&]() -> Result<std::shared_ptr<Engine>> {
    auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    SRT_ASSIGN_OR_RETURN(plan::LoadedPlan loaded,
                         plan::read_plan_bytes(holder->data(), holder->size(), holder));
    SRT_ASSIGN_OR_RETURN(auto st, make_state(std::move(loaded), device_, options_));
    return std::shared_ptr<Engine>(new Engine(std::move(st)));
  });
}

Result<std::shared_ptr<Engine>> Runtime::load_engine_bytes(std::vector<uint8_t> bytes, ExternalWeights weights) {
  // Released exactly once: when the last view of the weights goes, or here if loading fails.
  std::shared_ptr<const void> owner(weights.data, [release = std::move(weights.release)](const void*) {
    if (release) release();
  });
  return guard("loading a plan from memory (weights held apart)", [&]() -> Result<std::shared_ptr<Engine>> {
    auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    SRT_ASSIGN_OR_RETURN(plan::LoadedPlan loaded,
                         plan::read_plan_external(holder->data(), holder->size(), holder,
                                                  static_cast<const uint8_t*>(weights.data), weights.size,
                                                  std::move(owner)));
    SRT_ASSIGN_OR_RETURN(auto st, make_state(std::move(loaded), device_, options_));
    return std::shared_ptr<Engine>(new Engine(std::move(st)));
  });
}

Result<std::shared_ptr<Engine>> EngineFactory::timing_engine(const plan::PlanData& plan, DeviceType device) {
  DeviceBackend* backend = find_device_backend(device);
  if (!backend || !backend->supports_step_timing())
    return unsupported(std::string("per-step timing needs the CUDA device, not ") + device_type_name(device));
  SRT_RETURN_IF_ERROR(backend->available());
  plan::LoadedPlan loaded;
  loaded.data = plan;  // weight tensors are shared, not copied
  // No diagnostics: the builder's timing runs are no user's runs.
  SRT_ASSIGN_OR_RETURN(auto st, make_state(std::move(loaded), device, RuntimeOptions{}, true));
  return std::shared_ptr<Engine>(new Engine(std::move(st)));
}

Engine::Engine(std::unique_ptr<EngineState> state) : state_(std::move(state)) {}
Engine::~Engine() = default;

const std::string& Engine::name() const { return state_->plan.data.name; }
DeviceType Engine::device() const { return state_->device; }
size_t Engine::num_steps() const { return state_->plan.data.steps.size(); }
uint64_t Engine::device_memory_size() const {
  return state_->plan.data.arena_size + weight_streaming_scratch_size();
}
size_t Engine::num_execution_contexts() const { return state_->live_contexts.load(); }
uint64_t Engine::streamable_weights_size() const { return state_->streamable_bytes; }
uint64_t Engine::weight_streaming_budget() const { return state_->budget; }
uint64_t Engine::weight_streaming_automatic_budget() const { return automatic_budget(*state_); }

uint64_t Engine::weight_streaming_scratch_size() const { return state_->scratch_bytes; }
uint64_t Engine::minimum_device_memory() const { return minimum_memory(*state_); }

Status Engine::set_weight_streaming_budget(uint64_t bytes) {
  return guard([&] { return "engine '" + name() + "': set_weight_streaming_budget"; }, [&]() -> Status {
    EngineState& es = *state_;
    if (es.streamable_bytes == 0)
      return unsupported("engine '" + name() + "' has no streamable weights (build it with --weight-streaming)");
    std::lock_guard<std::mutex> lock(es.mutex);
    if (es.live_contexts.load() != 0)
      return invalid_state("engine '" + name() + "': the weight-streaming budget can change only while no execution " +
                           "context exists (" + std::to_string(es.live_contexts.load()) + " alive)");
    uint64_t previous = es.budget;
    es.budget = std::min(bytes, es.streamable_bytes);
    Status st = apply_budget(es);
    if (!st.ok()) {
      es.budget = previous;
      Status restore = apply_budget(es);
      if (!restore.ok())
        log_warning("engine '" + name() + "': restoring the previous budget failed: " + restore.message());
      return st.with_context("engine '" + name() + "': weight-streaming budget " + std::to_string(bytes));
    }
    return ok_status();
  });
}
bool Engine::weights_stripped() const { return state_->plan.data.weights_stripped; }

uint64_t Engine::weights_size() const {
  uint64_t n = 0;
  for (const auto& w : state_->plan.data.weights) n += w.size;
  return n;
}

std::vector<TensorDesc> Engine::io_tensors() const {
  std::vector<TensorDesc> out;
  auto add = [&](const plan::IoTensor& io, bool is_input) {
    const ir::SeqType& seq = state_->plan.data.values[static_cast<size_t>(io.value)].seq;
    out.push_back({io.name, is_input, io.dtype, io.dims, io.min, io.opt, io.max, seq.kind, seq.elem_dtype});
    out.back().seq_capacity = io.seq_capacity;
    out.back().seq_axis = io.seq_axis;
  };
  for (const auto& io : state_->plan.data.inputs) add(io, true);
  for (const auto& io : state_->plan.data.outputs) add(io, false);
  return out;
}

Result<std::unique_ptr<ExecutionContext>> Engine::create_execution_context() {
  const auto where = [&] { return "engine '" + name() + "': create_execution_context"; };
  return guard(where, [&]() -> Result<std::unique_ptr<ExecutionContext>> {
    if (weights_stripped())
      return invalid_state("engine '" + name() + "' was built without weights; refit it before running");
    std::lock_guard<std::mutex> lock(state_->mutex);
    SRT_ASSIGN_OR_RETURN(auto impl, find_device_backend(state_->device)->create_context(shared_from_this()));
    state_->live_contexts.fetch_add(1);
    return std::unique_ptr<ExecutionContext>(new ExecutionContext(std::move(impl), shared_from_this()));
  });
}

uint64_t TensorDesc::storage_bytes(const Dims& d) const {
  const uint64_t n = stored_numel(d, seq_axis, seq_capacity);
  uint64_t bytes = 0;
  return n == UINT64_MAX || __builtin_mul_overflow(n, dtype_size(dtype), &bytes) ? UINT64_MAX : bytes;
}

namespace {

Result<CapacityRows> storage_rows(const TensorDesc& desc, const Dims& dims) {
  auto r = capacity_rows(dims, desc.seq_axis, desc.seq_capacity);
  if (!r || desc.storage_bytes(dims) == UINT64_MAX)
    return invalid_argument("tensor '" + desc.name + "': dims " + dims_to_string(dims) + " do not fit its storage (" +
                            std::to_string(desc.seq_capacity) + " places along axis " + std::to_string(desc.seq_axis) +
                            ")");
  return *r;
}

}  // namespace

Status pack_to_storage(const TensorDesc& desc, const Dims& dims, const void* dense, void* stored) {
  SRT_ASSIGN_OR_RETURN(CapacityRows r, storage_rows(desc, dims));
  copy_dense_to_stored(r, dtype_size(desc.dtype), dense, stored);
  return ok_status();
}

Status unpack_from_storage(const TensorDesc& desc, const Dims& dims, const void* stored, void* dense) {
  SRT_ASSIGN_OR_RETURN(CapacityRows r, storage_rows(desc, dims));
  copy_stored_to_dense(r, dtype_size(desc.dtype), stored, dense);
  return ok_status();
}

}  // namespace streamrt
