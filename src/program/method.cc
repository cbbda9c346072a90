// Program and Method: loading a verified program's method (kernels resolved, delegates
// inited) and executing its instructions. Each execution works on its own copy of the
// method's values, so executions may run concurrently.
#include <algorithm>
#include <atomic>

#include "core/guard.h"
#include "ops/op.h"
#include "program/method_state.h"

namespace streamrt {

namespace {

using program::Instruction;
using program::ValueData;

uint64_t next_load_id() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

EValue initial_value(const LoadedProgram& lp, const std::vector<ValueData>& values, const ValueData& v) {
  auto constant = [&](const ValueData& t) {
    return Tensor::view(t.dtype, t.dims, lp.segment(static_cast<size_t>(t.constant_segment)).data(), lp.holder);
  };
  switch (v.tag) {
    case EValue::Tag::kTensor: return v.constant_segment >= 0 ? EValue(constant(v)) : EValue();
    case EValue::Tag::kInt: return EValue(v.int_value);
    case EValue::Tag::kDouble: return EValue(v.double_value);
    case EValue::Tag::kBool: return EValue(v.bool_value);
    case EValue::Tag::kIntList: return EValue(v.int_list);
    case EValue::Tag::kDoubleList: return EValue(v.double_list);
    case EValue::Tag::kBoolList: return EValue(v.bool_list);
    case EValue::Tag::kTensorList: {
      std::vector<Tensor> list;  // verified: constant tensors only
      for (int32_t t : v.tensor_list) list.push_back(constant(values[t]));
      return EValue(std::move(list));
    }
    case EValue::Tag::kNone: break;
  }
  return EValue();
}

std::string instruction_name(const program::MethodData& m, size_t i) {
  const Instruction& ins = m.instructions[i];
  std::string s = "method '" + m.name + "' instruction " + std::to_string(i);
  if (ins.kind == Instruction::Kind::kKernelCall) return s + " (kernel " + ins.kernel.op_type + " '" + ins.kernel.name + "')";
  return s + " (delegate " + std::to_string(ins.delegate.delegate) + ")";
}

// Checks a value against its declaration: kind, and for tensors dtype and the static dims.
Status check_value(const EValue& got, const ValueData& want, const std::string& what) {
  if (got.tag() != want.tag)
    return invalid_argument(what + " '" + want.name + "' is a " + evalue_tag_name(got.tag()) + ", expected a " +
                            evalue_tag_name(want.tag));
  if (!got.is_tensor()) return ok_status();
  const Tensor& t = *got.tensor();
  bool dims_ok = t.dims().size() == want.dims.size();
  for (size_t i = 0; dims_ok && i < want.dims.size(); ++i)
    dims_ok = want.dims[i] < 0 || want.dims[i] == t.dims()[i];
  if (t.dtype() != want.dtype || !dims_ok)
    return invalid_argument(what + " '" + want.name + "' is " + dtype_name(t.dtype()) + " " + dims_to_string(t.dims()) +
                            ", expected " + dtype_name(want.dtype) + " " + dims_to_string(want.dims));
  return ok_status();
}

Status run_kernel(const ir::Node& node, std::vector<EValue>& frame) {
  std::vector<Tensor> inputs(node.inputs.size());
  for (size_t k = 0; k < node.inputs.size(); ++k)
    if (node.inputs[k] >= 0) inputs[k] = *frame[node.inputs[k]].tensor();  // verified: written tensors
  SRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, ops::evaluate_on_host(node, inputs));
  for (size_t k = 0; k < node.outputs.size(); ++k)
    if (node.outputs[k] >= 0) frame[node.outputs[k]] = std::move(outputs[k]);
  return ok_status();
}

}  // namespace

// ---- Program --------------------------------------------------------------------------------

Program::Program(std::shared_ptr<const LoadedProgram> loaded) : loaded_(std::move(loaded)) {}
Program::~Program() = default;

Result<std::shared_ptr<const Program>> Program::load(const std::string& path) {
  const auto where = [&] { return "Program::load '" + path + "'"; };
  return guard(where, [&]() -> Result<std::shared_ptr<const Program>> {
    SRT_ASSIGN_OR_RETURN(LoadedProgram lp, program::read_program(path));
    return std::shared_ptr<const Program>(new Program(std::make_shared<LoadedProgram>(std::move(lp))));
  });
}

Result<std::shared_ptr<const Program>> Program::load_bytes(std::span<const uint8_t> bytes) {
  return guard("Program::load_bytes", [&]() -> Result<std::shared_ptr<const Program>> {
    auto copy = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
    SRT_ASSIGN_OR_RETURN(LoadedProgram lp, program::read_program_bytes(copy->data(), copy->size(), copy));
    return std::shared_ptr<const Program>(new Program(std::make_shared<LoadedProgram>(std::move(lp))));
  });
}

std::vector<std::string> Program::method_names() const {
  std::vector<std::string> out;
  for (const auto& m : loaded_->data.methods) out.push_back(m.name);
  return out;
}

Result<std::unique_ptr<Method>> Program::load_method(const std::string& name,
                                                     const LoadBackendOptionsMap& options) const {
  const auto where = [&] { return "Program::load_method '" + name + "'"; };
  return guard(where, [&]() -> Result<std::unique_ptr<Method>> {
    const program::MethodData* data = nullptr;
    for (const auto& m : loaded_->data.methods)
      if (m.name == name) data = &m;
    if (!data) {
      std::string have;
      for (const auto& n : method_names()) have += (have.empty() ? "'" : ", '") + n + "'";
      return not_found("the program has no method '" + name + "' (it has " + have + ")");
    }
    auto state = std::make_unique<MethodState>();
    state->program = loaded_;
    state->data = data;
    for (const ValueData& v : data->values) state->initial.push_back(initial_value(*loaded_, data->values, v));
    for (size_t i = 0; i < data->instructions.size(); ++i) {
      const Instruction& ins = data->instructions[i];
      if (ins.kind != Instruction::Kind::kKernelCall) continue;
      const ops::OpSchema* s = ops::OpRegistry::global().find(ins.kernel.op_type, ins.kernel.domain);
      if (!s || !s->cpu)
        return not_found(instruction_name(*data, i) + ": no portable kernel for op '" + ins.kernel.op_type + "'" +
                         (ins.kernel.domain.empty() ? "" : " (domain '" + ins.kernel.domain + "')"));
    }
    const uint64_t load_id = next_load_id();
    for (size_t d = 0; d < data->delegates.size(); ++d) {
      const program::DelegateData& dd = data->delegates[d];
      const std::string where = "method '" + name + "' delegate " + std::to_string(d) + " ('" + dd.backend + "')";
      BackendInterface* backend = get_backend(dd.backend);
      if (!backend) return not_found(where + ": no backend named '" + dd.backend + "' is registered");
      if (!backend->is_available()) return unsupported(where + ": the backend is not available on this machine");
      const std::span<const uint8_t> blob = loaded_->segment(static_cast<size_t>(dd.segment));
      // The blob stays valid while the program does; freeing drops this buffer's reference.
      FreeableBuffer processed(blob.data(), blob.size(), [keep = loaded_]() mutable { keep.reset(); });
      BackendInitContext ctx(dd.backend, name, options.get(dd.backend), load_id);
      Result<DelegateHandle*> handle = backend->init(ctx, &processed, dd.compile_specs);
      processed.free();
      // On failure the state's destructor destroys the delegates inited so far.
      if (!handle.ok()) return handle.status().with_context(where);
      state->delegates.push_back({dd.backend, backend, *handle});
    }
    return std::unique_ptr<Method>(new Method(std::move(state)));
  });
}

// ---- Method ---------------------------------------------------------------------------------

Method::Method(std::unique_ptr<MethodState> state) : state_(std::move(state)) {}
Method::~Method() = default;

const std::string& Method::name() const { return state_->data->name; }
size_t Method::num_inputs() const { return state_->data->inputs.size(); }
size_t Method::num_outputs() const { return state_->data->outputs.size(); }

std::vector<std::string> Method::backends() const {
  std::vector<std::string> out;
  for (const auto& d : state_->delegates)
    if (std::find(out.begin(), out.end(), d.backend_name) == out.end()) out.push_back(d.backend_name);
  return out;
}

Result<std::vector<EValue>> Method::execute(std::vector<EValue> inputs) const {
  return guard([&] { return "method '" + name() + "': execute"; }, [&]() -> Result<std::vector<EValue>> {
    const program::MethodData& m = *state_->data;
    if (inputs.size() != m.inputs.size())
      return invalid_argument("method '" + m.name + "' takes " + std::to_string(m.inputs.size()) + " inputs, got " +
                              std::to_string(inputs.size()));
    std::vector<EValue> frame = state_->initial;  // tensors are shared, not copied
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int32_t v = m.inputs[i];
      SRT_RETURN_IF_ERROR(check_value(inputs[i], m.values[v], "method '" + m.name + "' input " + std::to_string(i)));
      frame[v] = std::move(inputs[i]);
    }
    BackendExecutionContext ctx(m.name);
    for (size_t i = 0; i < m.instructions.size(); ++i) {
      const Instruction& ins = m.instructions[i];
      if (ins.kind == Instruction::Kind::kKernelCall) {
        Status st = run_kernel(ins.kernel, frame);
        if (!st.ok()) return st.with_context(instruction_name(m, i));
      } else {
        const program::DelegateCallData& call = ins.delegate;
        for (int32_t o : call.outputs) {  // outputs of static dims come allocated
          const ValueData& vd = m.values[o];
          if (dims_static(vd.dims)) {
            auto t = Tensor::allocate(vd.dtype, vd.dims);
            if (!t.ok()) return t.status().with_context(instruction_name(m, i));
            frame[o] = std::move(t).value();
          }
        }
        std::vector<EValue*> args;
        for (int32_t v : call.inputs) args.push_back(&frame[v]);
        for (int32_t v : call.outputs) args.push_back(&frame[v]);
        const MethodState::Delegate& d = state_->delegates[call.delegate];
        Status st = d.backend->execute(ctx, d.handle, args);
        if (!st.ok()) return st.with_context(instruction_name(m, i) + " ('" + d.backend_name + "')");
      }
      // Every output matches its declaration before anything reads it.
      const auto& outs = ins.kind == Instruction::Kind::kKernelCall ? ins.kernel.outputs : ins.delegate.outputs;
      for (int32_t o : outs) {
        if (o < 0) continue;
        Status st = check_value(frame[o], m.values[o], "output value");
        if (!st.ok()) return invalid_program(instruction_name(m, i) + ": " + st.message());
      }
    }
    std::vector<EValue> out;
    out.reserve(m.outputs.size());
    for (int32_t o : m.outputs) out.push_back(frame[o]);
    return out;
  });
}

Status Method::set_backend_option(const std::string& backend, std::span<const BackendOption> options) const {
  const auto where = [&] { return "method '" + name() + "': set_backend_option '" + backend + "'"; };
  return guard(where, [&]() -> Status {
    return MethodState::set_option({state_.get()}, backend, options);
  });
}

Status Method::get_backend_option(const std::string& backend, std::span<BackendOption> options) const {
  const auto where = [&] { return "method '" + name() + "': get_backend_option '" + backend + "'"; };
  return guard(where, [&]() -> Status {
    return MethodState::get_option({state_.get()}, backend, options);
  });
}

}  // namespace streamrt
