#include "ir/shape_inference.h"

#include "ops/partial_ints.h"

namespace streamrt::ir {
namespace {

// Records the known elements of value `id` if they fit its inferred dims; all of them known
// make its value (e.g. Gather(Shape(x), -1) of a static last dim of a dynamic x).
void keep_partial(InferResult& r, ValueId id, ops::PartialInts p) {
  const ops::TensorInfo& info = r.infos[id];
  if (!info.has_shape || !dims_static(info.dims) || p.size() > ops::kMaxPartialInts) return;
  if (auto n = checked_numel(info.dims); !n.ok() || *n != static_cast<int64_t>(p.size())) return;
  if (ops::fully_known(p)) {
    if (auto t = ops::partial_to_tensor(p, info.dtype, info.dims)) r.values[id] = std::move(*t);
    return;
  }
  r.partials[id] = std::move(p);
}

// kInvalidModel when `info`'s static dims hold more than `limit` elements. `what` names the tensor.
template <typename What>
Status check_elements(const ops::TensorInfo& info, int64_t limit, const What& what) {
  if (!info.has_shape || !dims_static(info.dims) || checked_numel(info.dims, limit).ok()) return ok_status();
  return invalid_model(what() + " has dims " + dims_to_string(info.dims) + ": more than " + std::to_string(limit) +
                       " elements (the builder's max_tensor_elements)");
}

// A value the model declares a sequence / optional stays one when a rule that passes values
// through (If, Loop, Identity of known contents) describes it as plain bytes; and one whose
// contents are not known has data-dependent length, whatever the profile's inputs were (so
// memory plans give it no arena slot: the runtime sizes it when made).
void keep_sequence_type(ops::TensorInfo& info, const Value& declared, bool known) {
  if (info.seq.is_tensor() && !declared.seq.is_tensor()) info.seq = declared.seq;
  if (info.seq.is_tensor() || known) return;
  info.dtype = DataType::kUInt8;
  info.dims = {kDynamicDim};
  info.has_shape = true;
}

}  // namespace

Result<InferResult> infer_shapes_readonly(const Graph& graph, const InferOptions& options) {
  const size_t nv = graph.values.size();
  InferResult r;
  r.infos.resize(nv);
  r.values.resize(nv);
  r.partials.resize(nv);
  for (size_t i = 0; i < nv; ++i) {
    const Value& v = graph.values[i];
    r.infos[i] = ops::TensorInfo{v.dtype, v.dims, v.has_shape, nullptr, nullptr, v.seq};
  }
  for (const auto& [id, dims] : options.input_dims) {
    r.infos[id].dims = dims;
    r.infos[id].has_shape = true;
  }
  for (ValueId id : graph.inputs)
    SRT_RETURN_IF_ERROR(check_elements(r.infos[id], options.max_tensor_elements,
                                       [&] { return "graph input '" + graph.value(id).name + "'"; }));
  for (const auto& [id, t] : graph.constants) r.values[id] = t;
  for (const auto& [id, t] : options.known_values) r.values[id] = t;

  for (size_t node_index = 0; node_index < graph.nodes.size(); ++node_index) {
    const Node& node = graph.nodes[node_index];
    SRT_RETURN_IF_ERROR(ops::verify_first_output(node));
    std::vector<ops::TensorInfo> ins(node.inputs.size());
    bool all_known = true;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      ValueId id = node.inputs[k];
      if (id == kNoValue) continue;
      ins[k] = r.infos[id];
      ins[k].value = r.values[id] ? &*r.values[id] : nullptr;
      ins[k].partial = r.partials[id] ? &*r.partials[id] : nullptr;
      if (!ins[k].value) all_known = false;
    }
    ops::InferContext ctx(node, ins, node.outputs.size());
    // Before the schema lookup: the importer stops here at ops it expands into others (no schema).
    if (options.before_node) SRT_RETURN_IF_ERROR(options.before_node(node_index, ctx));
    const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op_type, node.domain);
    if (!schema) return node.error(StatusCode::kUnsupported, "unsupported op");
    // The op's load-time checks hold at build time too, so the builder never writes a plan
    // that its own loader would refuse.
    if (schema->verify) SRT_RETURN_IF_ERROR(schema->verify(ctx));
    SRT_RETURN_IF_ERROR(schema->infer(ctx));
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      ValueId id = node.outputs[k];
      if (id == kNoValue) continue;
      r.infos[id] = ctx.outputs()[k];
      keep_sequence_type(r.infos[id], graph.value(id), ctx.output_values()[k].has_value());
      SRT_RETURN_IF_ERROR(check_elements(r.infos[id], options.max_tensor_elements, [&] {
        return node.describe() + ": output '" + graph.value(id).name + "'";
      }));
      if (ctx.output_values()[k]) r.values[id] = std::move(ctx.output_values()[k]);
      else if (auto& p = ctx.output_partials()[k]; p && options.max_propagated_elements > 0)
        keep_partial(r, id, std::move(*p));
    }
    // Random draws are made at run time, every run: never a constant.
    if (!all_known || options.max_propagated_elements <= 0 || schema->nondeterministic) continue;
    // Propagate contents of small outputs whose inputs are all known.
    bool small = true;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      ValueId id = node.outputs[k];
      if (id == kNoValue || r.values[id]) continue;
      const auto& info = r.infos[id];
      if (!info.has_shape || !dims_static(info.dims) ||
          !checked_numel(info.dims, options.max_propagated_elements).ok())
        small = false;
    }
    for (size_t k = 0; k < node.inputs.size() && small; ++k)
      if (node.inputs[k] != kNoValue && r.values[node.inputs[k]]->numel() > options.max_propagated_input_elements)
        small = false;
    if (!small) continue;
    std::vector<Tensor> in_tensors(node.inputs.size());
    for (size_t k = 0; k < node.inputs.size(); ++k)
      if (node.inputs[k] != kNoValue) in_tensors[k] = *r.values[node.inputs[k]];
    auto outs = ops::evaluate_on_host(node, in_tensors);
    if (!outs.ok()) return outs.status();
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (node.outputs[k] != kNoValue) r.values[node.outputs[k]] = std::move((*outs)[k]);
  }
  return r;
}

Result<InferResult> infer_shapes(Graph& graph, const InferOptions& options) {
  SRT_ASSIGN_OR_RETURN(InferResult r, infer_shapes_readonly(graph, options));
  for (size_t i = 0; i < graph.values.size(); ++i) {
    if (graph.is_constant(static_cast<ValueId>(i))) continue;
    Value& v = graph.values[i];
    v.dtype = r.infos[i].dtype;
    v.dims = r.infos[i].dims;
    v.has_shape = r.infos[i].has_shape;
    v.seq = r.infos[i].seq;
  }
  return r;
}

std::string unsupported_ops(const Graph& graph, bool missing_ops) {
  std::string out;
  for (const Node& node : graph.nodes) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(node.op_type, node.domain);
    if (s ? node.opset >= s->min_opset : !missing_ops) continue;
    if (!out.empty()) out += ", ";
    out += (node.domain.empty() ? "" : node.domain + ".") + node.op_type + " (node '" + node.name + "'";
    if (s) out += ", opset " + std::to_string(node.opset) + " < " + std::to_string(s->min_opset);
    out += ")";
  }
  return out;
}

}  // namespace streamrt::ir
