#include "ops/op.h"

#include <algorithm>
#include <iterator>

namespace streamrt::ops {

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = new OpRegistry();  // never destroyed: used during static init
  return *registry;
}

void OpRegistry::add(OpSchema schema) {
  if (find(schema.op_type, schema.domain)) {
    errors_.push_back("op '" + schema.op_type + "' registered twice");
    return;
  }
  schemas_.push_back(std::move(schema));
}

const OpSchema* OpRegistry::find(const std::string& op_type, const std::string& domain) const {
  for (const auto& s : schemas_)
    if (s.op_type == op_type && s.domain == domain) return &s;
  return nullptr;
}

std::vector<std::string> OpRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& s : schemas_) out.push_back(s.op_type);
  std::sort(out.begin(), out.end());
  return out;
}

std::string dtype_mask_names(DTypeMask m, const char* sep) {
  // Family by family (floats, signed, unsigned, bool), narrow to wide within each.
  static constexpr DataType kOrder[] = {
      DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
      DataType::kInt16,   DataType::kInt32,   DataType::kInt64,    DataType::kUInt8,   DataType::kUInt16,
      DataType::kUInt32,  DataType::kUInt64,  DataType::kBool};
  static_assert(std::size(kOrder) == static_cast<size_t>(kLastDataType), "a data type missing from kOrder");
  std::string out;
  for (DataType t : kOrder)
    if (has_dtype(m, t)) out += (out.empty() ? "" : sep) + std::string(dtype_name(t));
  return out;
}

Status verify_first_output(const ir::Node& node) {
  if (node.outputs.empty() || node.outputs[0] == ir::kNoValue)
    return node.error(StatusCode::kInvalidModel, "has no first output (every op's first output is required)");
  return ok_status();
}

Status verify_attr_range(const ir::Node& node, const char* attr, int64_t lo, int64_t hi) {
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end()) return ok_status();
  const ir::Attribute& a = it->second;
  std::vector<int64_t> values;
  if (a.kind == ir::Attribute::Kind::kInt) values = {a.i};
  else if (a.kind == ir::Attribute::Kind::kInts) values = a.ints;
  else return ok_status();  // a wrong kind is the shape rule's error
  for (size_t k = 0; k < values.size(); ++k)
    if (values[k] < lo || values[k] > hi)
      return node.error(StatusCode::kInvalidModel, std::string("attribute '") + attr + "'" +
                                                       (values.size() > 1 ? "[" + std::to_string(k) + "]" : "") +
                                                       " is " + std::to_string(values[k]) + ", outside [" +
                                                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return ok_status();
}

Status verify_axis_attr(const InferContext& ctx, const char* attr, int64_t def, size_t in, int64_t extra) {
  if (!ctx.has_input(in) || !ctx.input(in).has_shape) return ok_status();
  const int64_t rank = static_cast<int64_t>(ctx.input_dims(in).size()) + extra;
  SRT_ASSIGN_OR_RETURN(int64_t axis, ctx.node().attr_int(attr, def));
  if (axis < -rank || axis >= rank)
    return ctx.error(std::string("attribute '") + attr + "' is " + std::to_string(axis) +
                     ", outside [" + std::to_string(-rank) + ", " + std::to_string(rank) + ") for rank " +
                     std::to_string(rank));
  return ok_status();
}

Result<std::vector<Tensor>> evaluate_on_host(const ir::Node& node, const std::vector<Tensor>& inputs) {
  const OpSchema* schema = OpRegistry::global().find(node.op_type, node.domain);
  if (!schema) return node.error(StatusCode::kUnsupported, "no such op");
  SRT_RETURN_IF_ERROR(verify_first_output(node));
  std::vector<TensorInfo> infos(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].empty()) infos[i] = TensorInfo{inputs[i].dtype(), inputs[i].dims(), true, &inputs[i]};
  InferContext ictx(node, infos, node.outputs.size());
  // Programs run their kernels through here on untrusted steps: the op's load-time check too.
  if (schema->verify) SRT_RETURN_IF_ERROR(schema->verify(ictx));
  SRT_RETURN_IF_ERROR(schema->infer(ictx));
  std::vector<Tensor> outputs(node.outputs.size());
  std::vector<TensorRef> in_refs(inputs.size()), out_refs(outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].empty())
      in_refs[i] = TensorRef{inputs[i].dtype(), inputs[i].dims(), const_cast<void*>(inputs[i].data())};
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue) continue;
    const TensorInfo& info = ictx.outputs()[i];
    if (!info.has_shape || !dims_static(info.dims))
      return node.error(StatusCode::kInternal, "output " + std::to_string(i) + " has no static shape");
    SRT_ASSIGN_OR_RETURN(outputs[i], Tensor::allocate(info.dtype, info.dims));
    out_refs[i] = TensorRef{info.dtype, info.dims, outputs[i].mutable_data()};
  }
  KernelContext kctx(node, in_refs, out_refs);
  SRT_RETURN_IF_ERROR(schema->cpu(kctx));
  return outputs;
}

}  // namespace streamrt::ops
