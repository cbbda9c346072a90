#include "ops/op.h"

#include <algorithm>

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

Result<std::vector<Tensor>> evaluate_on_host(const ir::Node& node, const std::vector<Tensor>& inputs) {
  const OpSchema* schema = OpRegistry::global().find(node.op_type, node.domain);
  if (!schema) return node.error(StatusCode::kUnsupported, "no such op");
  std::vector<TensorInfo> infos(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].empty()) infos[i] = TensorInfo{inputs[i].dtype(), inputs[i].dims(), true, &inputs[i]};
  InferContext ictx(node, infos, node.outputs.size());
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
