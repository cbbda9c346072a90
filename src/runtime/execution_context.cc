#include <cstdlib>

#include "ir/shape_inference.h"
#include "runtime/engine_state.h"
#include "streamrt/runtime.h"

namespace streamrt {

using plan::ValueEntry;

struct ContextState {
  std::shared_ptr<const Engine> engine;
  const EngineState* es = nullptr;
  std::unique_ptr<uint8_t, void (*)(void*)> arena{nullptr, std::free};
  std::vector<ops::TensorRef> current;       // per plan value, during/after execute
  std::vector<Dims> input_dims;              // per plan value (inputs)
  std::vector<void*> bound;                  // per plan value (inputs / outputs)
  std::vector<size_t> capacity;              // per plan value (inputs / outputs)
  std::vector<std::vector<uint8_t>> overflow;  // activations larger than their arena slot
  std::vector<Dims> output_dims;             // per plan value (outputs), after execute

  const plan::PlanData& plan() const { return es->plan.data; }

  Result<int32_t> io_value(const std::string& name) const {
    auto it = es->io_index.find(name);
    if (it == es->io_index.end())
      return not_found("engine '" + plan().name + "' has no input or output named '" + name + "'");
    return it->second;
  }
  const plan::IoTensor* input_desc(int32_t v) const {
    for (const auto& io : plan().inputs)
      if (io.value == v) return &io;
    return nullptr;
  }
};

ExecutionContext::ExecutionContext(std::shared_ptr<const Engine> engine) : state_(new ContextState) {
  ContextState& s = *state_;
  s.engine = std::move(engine);
  s.es = &s.engine->state();
  const size_t nv = s.plan().values.size();
  s.current.resize(nv);
  s.input_dims.resize(nv);
  s.bound.assign(nv, nullptr);
  s.capacity.assign(nv, SIZE_MAX);
  s.overflow.resize(nv);
  s.output_dims.resize(nv);
  for (const auto& io : s.plan().inputs)
    if (dims_static(io.dims)) s.input_dims[io.value] = io.dims;
  size_t bytes = (s.plan().arena_size + 63) / 64 * 64;
  if (bytes) s.arena.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
}

ExecutionContext::~ExecutionContext() = default;

Status ExecutionContext::set_input_shape(const std::string& name, const Dims& dims) {
  ContextState& s = *state_;
  SRT_ASSIGN_OR_RETURN(int32_t v, s.io_value(name));
  const plan::IoTensor* io = s.input_desc(v);
  if (!io) return invalid_argument("'" + name + "' is an output; only inputs take a shape");
  bool ok = dims.size() == io->min.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = dims[i] >= io->min[i] && dims[i] <= io->max[i];
  if (!ok)
    return invalid_argument("input '" + name + "': dims " + dims_to_string(dims) +
                            " are outside the optimization profile [" + dims_to_string(io->min) +
                            " .. " + dims_to_string(io->max) + "]");
  s.input_dims[v] = dims;
  return ok_status();
}

Status ExecutionContext::set_tensor_address(const std::string& name, void* data, size_t capacity) {
  ContextState& s = *state_;
  SRT_ASSIGN_OR_RETURN(int32_t v, s.io_value(name));
  if (!data) return invalid_argument("tensor '" + name + "': address is null");
  s.bound[v] = data;
  s.capacity[v] = capacity;
  return ok_status();
}

Result<Dims> ExecutionContext::tensor_shape(const std::string& name) const {
  const ContextState& s = *state_;
  SRT_ASSIGN_OR_RETURN(int32_t v, s.io_value(name));
  if (s.input_desc(v)) {
    if (s.input_dims[v].empty() && !s.input_desc(v)->dims.empty())
      return invalid_state("input '" + name + "' has no shape yet; call set_input_shape");
    return s.input_dims[v];
  }
  if (s.current[v].present()) return s.output_dims[v];
  // Before execute(): a shape-only pass over the steps with the current input dims and the
  // contents of bound inputs (shape tensors).
  ir::InferOptions opts;
  for (const auto& io : s.plan().inputs) {
    if (s.input_dims[io.value].size() != io.dims.size())
      return invalid_state("input '" + io.name + "' has no shape yet; call set_input_shape");
    opts.input_dims[io.value] = s.input_dims[io.value];
    if (s.bound[io.value])
      opts.known_values[io.value] = Tensor::view(io.dtype, s.input_dims[io.value], s.bound[io.value], nullptr);
  }
  SRT_ASSIGN_OR_RETURN(ir::InferResult r, ir::infer_shapes_readonly(s.es->graph, opts));
  const ops::TensorInfo& info = r.infos[v];
  if (!info.has_shape || !dims_static(info.dims))
    return invalid_state("output '" + name + "' has a data-dependent shape; it is known after execute()");
  return info.dims;
}

namespace {

Status bind_inputs(ContextState& s) {
  const plan::PlanData& p = s.plan();
  for (const auto& io : p.inputs) {
    int32_t v = io.value;
    if (s.input_dims[v].size() != io.dims.size())
      return invalid_state("input '" + io.name + "' has dynamic dims " + dims_to_string(io.dims) +
                           "; call set_input_shape first");
    if (!s.bound[v]) return invalid_state("input '" + io.name + "' has no address; call set_tensor_address");
    ops::TensorRef r{io.dtype, s.input_dims[v], s.bound[v]};
    if (r.nbytes() > s.capacity[v])
      return invalid_argument("input '" + io.name + "' needs " + std::to_string(r.nbytes()) +
                              " bytes, its buffer holds " + std::to_string(s.capacity[v]));
    s.current[v] = r;
  }
  for (const auto& io : p.outputs)
    if (!s.bound[io.value])
      return invalid_state("output '" + io.name + "' has no address; call set_tensor_address");
  for (size_t v = 0; v < p.values.size(); ++v) {
    const ValueEntry& e = p.values[v];
    if (e.kind != ValueEntry::Kind::kWeight) continue;
    const Tensor& w = s.es->plan.data.weight_data[e.weight_index];
    s.current[v] = ops::TensorRef{w.dtype(), w.dims(), const_cast<void*>(w.data())};
  }
  return ok_status();
}

// Points output `v` of a step at memory for `bytes` bytes.
Status place_output(ContextState& s, int32_t v, const ir::Node& step, uint64_t bytes, void** out) {
  const ValueEntry& e = s.plan().values[v];
  switch (e.kind) {
    case ValueEntry::Kind::kOutput:
      if (bytes > s.capacity[v])
        return invalid_argument("output '" + e.name + "' needs " + std::to_string(bytes) +
                                " bytes, its buffer holds " + std::to_string(s.capacity[v]));
      *out = s.bound[v];
      return ok_status();
    case ValueEntry::Kind::kActivation:
      if (bytes <= e.arena_size) {
        *out = s.arena.get() + e.arena_offset;
      } else {  // data-dependent size beyond the plan: a buffer of its own
        s.overflow[v].resize(bytes + 64);
        *out = s.overflow[v].data();
      }
      return ok_status();
    default:
      return internal_error(step.describe() + " writes to '" + e.name + "', which is not an activation");
  }
}

Status run_step(ContextState& s, size_t index) {
  const ir::Node& step = s.plan().steps[index];
  const ops::OpSchema* schema = s.es->schemas[index];
  std::vector<ops::TensorRef> in_refs(step.inputs.size());
  std::vector<Tensor> views(step.inputs.size());
  std::vector<ops::TensorInfo> infos(step.inputs.size());
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    int32_t v = step.inputs[k];
    if (v < 0) continue;
    const ops::TensorRef& r = s.current[v];
    if (!r.present()) return internal_error(step.describe() + ": input " + std::to_string(k) + " not computed");
    in_refs[k] = r;
    views[k] = Tensor::view(r.dtype, r.dims, r.data, nullptr);
    infos[k] = ops::TensorInfo{r.dtype, r.dims, true, &views[k]};
  }
  ops::InferContext ictx(step, std::move(infos), step.outputs.size());
  SRT_RETURN_IF_ERROR(schema->infer(ictx));
  std::vector<ops::TensorRef> out_refs(step.outputs.size());
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    int32_t v = step.outputs[k];
    if (v < 0) continue;
    const ops::TensorInfo& info = ictx.outputs()[k];
    if (!info.has_shape || !dims_static(info.dims))
      return internal_error(step.describe() + ": output " + std::to_string(k) + " has no static shape at run time");
    ops::TensorRef r{info.dtype, info.dims, nullptr};
    SRT_RETURN_IF_ERROR(place_output(s, v, step, r.nbytes(), &r.data));
    out_refs[k] = r;
  }
  ops::KernelContext kctx(step, in_refs, out_refs);
  SRT_RETURN_IF_ERROR(schema->cpu(kctx));
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    int32_t v = step.outputs[k];
    if (v < 0) continue;
    s.current[v] = out_refs[k];
    if (s.plan().values[v].kind == ValueEntry::Kind::kOutput) s.output_dims[v] = out_refs[k].dims;
  }
  return ok_status();
}

}  // namespace

Status ExecutionContext::execute() {
  ContextState& s = *state_;
  if (s.plan().arena_size && !s.arena)
    return out_of_memory("activation arena of " + std::to_string(s.plan().arena_size) + " bytes");
  for (auto& r : s.current) r = ops::TensorRef{};
  SRT_RETURN_IF_ERROR(bind_inputs(s));
  for (size_t i = 0; i < s.plan().steps.size(); ++i) {
    Status st = run_step(s, i);
    if (!st.ok()) return st.with_context("engine '" + s.plan().name + "' step " + std::to_string(i));
  }
  return ok_status();
}

}  // namespace streamrt
