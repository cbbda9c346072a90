#include "streamrt/runtime.h"

#include "core/logging.h"
#include "runtime/device_backend.h"

namespace streamrt {

Result<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  DeviceBackend* cuda = find_device_backend(DeviceType::kCuda);
  DeviceType device = options.device.value_or(cuda && cuda->available().ok() ? DeviceType::kCuda
                                                                             : DeviceType::kCpu);
  DeviceBackend* backend = find_device_backend(device);
  if (!backend) return unsupported(std::string("this build of streamrt has no ") + device_type_name(device) + " backend");
  SRT_RETURN_IF_ERROR(backend->available());
  return std::unique_ptr<Runtime>(new Runtime(device));
}

namespace {

Result<std::unique_ptr<EngineState>> make_state(plan::LoadedPlan loaded, DeviceType device) {
  auto st = std::make_unique<EngineState>();
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
  ir::Graph& g = st->graph;
  for (const auto& v : p.values) g.add_value(v.name, v.dtype, v.dims, true);
  for (size_t v = 0; v < p.values.size(); ++v)
    if (p.values[v].kind == plan::ValueEntry::Kind::kWeight && !p.weights_stripped)
      g.constants[static_cast<ir::ValueId>(v)] = loaded.data.weight_data[p.values[v].weight_index];
  g.nodes = p.steps;
  for (const auto& io : p.inputs) g.inputs.push_back(io.value);
  for (const auto& io : p.outputs) g.outputs.push_back(io.value);
  for (const auto& io : p.inputs) st->io_index[io.name] = io.value;
  for (const auto& io : p.outputs) st->io_index[io.name] = io.value;
  st->device = device;
  st->plan = std::move(loaded);
  SRT_RETURN_IF_ERROR(find_device_backend(device)->prepare_engine(*st));
  return st;
}

}  // namespace

Result<std::shared_ptr<Engine>> Runtime::load_engine(const std::string& plan_path) {
  auto loaded = plan::read_plan(plan_path);  // its errors name the file
  if (!loaded.ok()) return loaded.status();
  auto st = make_state(std::move(loaded).value(), device_);
  if (!st.ok()) return st.status().with_context(plan_path);
  return std::shared_ptr<Engine>(new Engine(std::move(st).value()));
}

Result<std::shared_ptr<Engine>> Runtime::load_engine_bytes(std::vector<uint8_t> bytes) {
  auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  SRT_ASSIGN_OR_RETURN(plan::LoadedPlan loaded,
                       plan::read_plan_bytes(holder->data(), holder->size(), holder));
  SRT_ASSIGN_OR_RETURN(auto st, make_state(std::move(loaded), device_));
  return std::shared_ptr<Engine>(new Engine(std::move(st)));
}

Engine::Engine(std::unique_ptr<EngineState> state) : state_(std::move(state)) {}
Engine::~Engine() = default;

const std::string& Engine::name() const { return state_->plan.data.name; }
DeviceType Engine::device() const { return state_->device; }
size_t Engine::num_steps() const { return state_->plan.data.steps.size(); }
uint64_t Engine::device_memory_size() const { return state_->plan.data.arena_size; }
bool Engine::weights_stripped() const { return state_->plan.data.weights_stripped; }

uint64_t Engine::weights_size() const {
  uint64_t n = 0;
  for (const auto& w : state_->plan.data.weights) n += w.size;
  return n;
}

std::vector<TensorDesc> Engine::io_tensors() const {
  std::vector<TensorDesc> out;
  auto add = [&](const plan::IoTensor& io, bool is_input) {
    out.push_back({io.name, is_input, io.dtype, io.dims, io.min, io.opt, io.max});
  };
  for (const auto& io : state_->plan.data.inputs) add(io, true);
  for (const auto& io : state_->plan.data.outputs) add(io, false);
  return out;
}

Result<std::unique_ptr<ExecutionContext>> Engine::create_execution_context() {
  if (weights_stripped())
    return invalid_state("engine '" + name() + "' was built without weights; refit it before running");
  SRT_ASSIGN_OR_RETURN(auto impl, find_device_backend(state_->device)->create_context(shared_from_this()));
  return std::unique_ptr<ExecutionContext>(new ExecutionContext(std::move(impl)));
}

}  // namespace streamrt
