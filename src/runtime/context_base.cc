#include "runtime/context_base.h"

#include "core/capacity_layout.h"
#include "ir/shape_inference.h"
#include "ops/sequence_value.h"

namespace streamrt {

ContextBase::ContextBase(std::shared_ptr<const Engine> engine)
    : engine_(std::move(engine)), es_(&engine_->state()), layouts_(plan::value_layouts(plan())) {
  const size_t nv = plan().values.size();
  input_dims_.resize(nv);
  bound_.assign(nv, nullptr);
  capacity_.assign(nv, SIZE_MAX);
  output_dims_.resize(nv);
  seq_in_.resize(nv);
  seq_out_.resize(nv);
  for (const auto& io : plan().inputs)
    if (dims_static(io.dims)) input_dims_[io.value] = io.dims;
}

Result<int32_t> ContextBase::io_value(const std::string& name) const {
  auto it = es_->io_index.find(name);
  if (it == es_->io_index.end())
    return not_found("engine '" + plan().name + "' has no input or output named '" + name + "'");
  return it->second;
}

const plan::IoTensor* ContextBase::input_desc(int32_t v) const {
  for (const auto& io : plan().inputs)
    if (io.value == v) return &io;
  return nullptr;
}

void ContextBase::invalidate_outputs() { have_outputs_ = false; }

Status ContextBase::set_input_shape(const std::string& name, const Dims& dims) {
  SRT_ASSIGN_OR_RETURN(int32_t v, io_value(name));
  const plan::IoTensor* io = input_desc(v);
  if (!io) return invalid_argument("'" + name + "' is an output; only inputs take a shape");
  bool ok = dims.size() == io->min.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = dims[i] >= io->min[i] && dims[i] <= io->max[i];
  if (!ok)
    return invalid_argument("input '" + name + "': dims " + dims_to_string(dims) +
                            " are outside the optimization profile [" + dims_to_string(io->min) +
                            " .. " + dims_to_string(io->max) + "]");
  input_dims_[v] = dims;
  invalidate_outputs();
  return ok_status();
}

Status ContextBase::set_tensor_address(const std::string& name, void* data, size_t capacity) {
  SRT_ASSIGN_OR_RETURN(int32_t v, io_value(name));
  if (!data) return invalid_argument("tensor '" + name + "': address is null");
  bound_[v] = data;
  capacity_[v] = capacity;
  if (input_desc(v)) invalidate_outputs();  // shape tensors may change output dims
  return ok_status();
}

Result<Dims> ContextBase::tensor_shape(const std::string& name) const {
  SRT_ASSIGN_OR_RETURN(int32_t v, io_value(name));
  if (const plan::IoTensor* io = input_desc(v)) {
    if (input_dims_[v].size() != io->dims.size())
      return invalid_state("input '" + name + "' has no shape yet; call set_input_shape");
    return input_dims_[v];
  }
  if (have_outputs_) return output_dims_[v];
  // Before a run: a shape-only pass over the steps with the current input dims and, on the
  // CPU, the contents of bound inputs (shape tensors).
  ir::InferOptions opts;
  for (const auto& io : plan().inputs) {
    if (input_dims_[io.value].size() != io.dims.size())
      return invalid_state("input '" + io.name + "' has no shape yet; call set_input_shape");
    opts.input_dims[io.value] = input_dims_[io.value];
    // Small inputs may be shape tensors (Reshape targets, Range bounds): their contents count.
    if (bound_[io.value] && io.seq_capacity == 0 && dims_numel(input_dims_[io.value]) <= 4096) {
      Tensor t = input_on_host(io.value);
      if (!t.empty()) opts.known_values[io.value] = std::move(t);
    }
  }
  SRT_ASSIGN_OR_RETURN(ir::InferResult r, ir::infer_shapes_readonly(es_->graph, opts));
  const ops::TensorInfo& info = r.infos[v];
  if (!info.has_shape || !dims_static(info.dims))
    return invalid_state("output '" + name + "' has a data-dependent shape; it is known after execute()");
  return info.dims;
}

Status ContextBase::set_sequence_input(const std::string& name, const SequenceValue& value) {
  SRT_ASSIGN_OR_RETURN(int32_t v, io_value(name));
  if (!input_desc(v)) return invalid_argument("'" + name + "' is an output; only inputs take a value");
  const ir::SeqType& t = plan().values[v].seq;
  if (t.is_tensor()) return invalid_argument("input '" + name + "' is a tensor; bind it with set_tensor_address");
  if (value.kind != t.kind || value.elem_dtype != t.elem_dtype)
    return invalid_argument("input '" + name + "' is a " + value_kind_name(t.kind) + " of " + dtype_name(t.elem_dtype) +
                            ", the value a " + value_kind_name(value.kind) + " of " + dtype_name(value.elem_dtype));
  SRT_ASSIGN_OR_RETURN(ops::SeqValue sv, ops::from_public(value, "input '" + name + "'"));
  SRT_ASSIGN_OR_RETURN(Tensor blob, ops::encode_seq(sv));
  SRT_RETURN_IF_ERROR(set_input_shape(name, blob.dims()));
  SRT_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(engine_->device(), blob.nbytes()));
  SRT_RETURN_IF_ERROR(buf.copy_from_host(blob.data(), blob.nbytes()));
  seq_in_[v] = std::move(buf);
  return set_tensor_address(name, seq_in_[v].data(), blob.nbytes());
}

Result<SequenceValue> ContextBase::sequence_output(const std::string& name) const {
  SRT_ASSIGN_OR_RETURN(int32_t v, io_value(name));
  if (input_desc(v)) return invalid_argument("'" + name + "' is an input");
  if (plan().values[v].seq.is_tensor()) return invalid_argument("output '" + name + "' is a tensor, not a sequence");
  if (!have_outputs_) return invalid_state("output '" + name + "' is known after a run");
  const Dims& d = output_dims_[v];
  if (d.size() != 1) return internal_error("output '" + name + "' has dims " + dims_to_string(d));
  const void* src = bound_[v] ? bound_[v] : seq_out_[v].data();
  SRT_ASSIGN_OR_RETURN(Tensor host, Tensor::allocate(DataType::kUInt8, d));
  if (d[0] > 0) SRT_RETURN_IF_ERROR(find_device_backend(engine_->device())->copy_to_host(host.mutable_data(), src, host.nbytes()));
  SRT_ASSIGN_OR_RETURN(ops::SeqValue sv, ops::decode_seq(host, "output '" + name + "'"));
  return ops::to_public(sv);
}

Result<uint64_t> ContextBase::stored_bytes(int32_t v, const Dims& dims) const {
  const plan::ValueLayout& l = layouts_[static_cast<size_t>(v)];
  const size_t esize = dtype_size(plan().values[v].dtype);
  if (l.capacity == 0) return static_cast<uint64_t>(dims_numel(dims)) * esize;
  const uint64_t n = stored_numel(dims, l.axis, l.capacity);
  uint64_t bytes = 0;
  if (n == UINT64_MAX || __builtin_mul_overflow(n, esize, &bytes))
    return invalid_argument("'" + plan().values[v].name + "' of dims " + dims_to_string(dims) +
                            " does not fit its capacity of " + std::to_string(l.capacity) + " along axis " +
                            std::to_string(l.axis));
  return bytes;
}

Tensor ContextBase::input_on_host(int32_t v) const {
  const plan::IoTensor* io = input_desc(v);
  return Tensor::view(io->dtype, input_dims_[v], bound_[v], nullptr);
}

Status ContextBase::check_bindings() const {
  for (const auto& io : plan().inputs) {
    const int32_t v = io.value;
    if (input_dims_[v].size() != io.dims.size())
      return invalid_state("input '" + io.name + "' has dynamic dims " + dims_to_string(io.dims) +
                           "; call set_input_shape first");
    if (!bound_[v]) return invalid_state("input '" + io.name + "' has no address; call set_tensor_address");
    SRT_ASSIGN_OR_RETURN(uint64_t bytes, stored_bytes(v, input_dims_[v]));
    if (bytes > capacity_[v])
      return invalid_argument("input '" + io.name + "' needs " + std::to_string(bytes) + " bytes" +
                              (io.seq_capacity ? " (room for " + std::to_string(io.seq_capacity) + " along axis " +
                                                     std::to_string(io.seq_axis) + ": TensorDesc::storage_bytes)"
                                               : std::string()) +
                              ", its buffer holds " + std::to_string(capacity_[v]));
  }
  for (const auto& io : plan().outputs)
    if (!bound_[io.value] && plan().values[io.value].seq.is_tensor())  // sequences: held by the context
      return invalid_state("output '" + io.name + "' has no address; call set_tensor_address");
  return ok_status();
}

Result<std::vector<ops::TensorRef>> ContextBase::prepare_outputs(size_t index, std::vector<ops::TensorInfo> inputs,
                                                                 const PlaceFn& place) const {
  const ir::Node& step = plan().steps[index];
  // What a sequence / optional input holds comes from the plan (backends pass dtype and dims).
  for (size_t k = 0; k < step.inputs.size() && k < inputs.size(); ++k)
    if (step.inputs[k] >= 0 && inputs[k].seq.is_tensor()) inputs[k].seq = plan().values[step.inputs[k]].seq;
  ops::InferContext ictx(step, std::move(inputs), step.outputs.size());
  SRT_RETURN_IF_ERROR(es_->schemas[index]->infer(ictx));
  std::vector<ops::TensorRef> refs(step.outputs.size());
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    if (step.outputs[k] < 0) continue;
    const ops::TensorInfo& info = ictx.outputs()[k];
    if (!info.has_shape || !dims_static(info.dims))
      return internal_error(step.describe() + ": output " + std::to_string(k) + " has no static shape at run time");
    refs[k] = ops::TensorRef{info.dtype, info.dims, nullptr};
    SRT_ASSIGN_OR_RETURN(uint64_t bytes, stored_bytes(step.outputs[k], info.dims));
    SRT_RETURN_IF_ERROR(place(step.outputs[k], bytes, &refs[k].data));
  }
  return refs;
}

Status ContextBase::output_buffer(int32_t v, uint64_t bytes, void** out) const {
  if (!bound_[v] && !plan().values[v].seq.is_tensor()) {  // a sequence / optional output the context holds
    DeviceBuffer& buf = seq_out_[v];
    if (buf.size() < bytes || !buf.data()) {
      SRT_ASSIGN_OR_RETURN(buf, DeviceBuffer::allocate(engine_->device(), std::max<uint64_t>(bytes, 1)));
    }
    *out = buf.data();
    return ok_status();
  }
  if (bytes > capacity_[v])
    return invalid_argument("output '" + plan().values[v].name + "' needs " + std::to_string(bytes) +
                            " bytes, its buffer holds " + std::to_string(capacity_[v]));
  *out = bound_[v];
  return ok_status();
}

}  // namespace streamrt
