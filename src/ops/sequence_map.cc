// SequenceMap (opset 17): runs `body` once per element of input_sequence. Node inputs
// [input_sequence, additional_inputs..., captures...], body inputs [one per formal input...,
// captures...] (ir/subgraph.h). A formal input that is a sequence where the body takes a tensor
// gives the body its i-th element (it must be as long as input_sequence); anything else is passed
// whole. Body output j, gathered over the iterations, makes output sequence j.
#include "ops/common.h"
#include "ops/sequence_value.h"
#include "ops/subgraph_exec.h"

namespace streamrt::ops {
namespace {

Result<const ir::Graph*> body_of(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(const ir::Graph* body, node.attr_graph("body"));
  const size_t caps = static_cast<size_t>(std::max(0, body->num_captures));
  if (node.inputs.size() < 1 + caps) return node.error(StatusCode::kInvalidModel, "needs input_sequence");
  const size_t formal = node.inputs.size() - caps;
  SRT_RETURN_IF_ERROR(check_body(node, *body, "body", formal, formal, node.outputs.size()));
  return body;
}

bool body_takes_tensor(const ir::Graph& body, size_t k) { return body.value(body.inputs[k]).seq.is_tensor(); }

Result<std::vector<Tensor>> run(const ir::Node& node, const std::vector<Tensor>& ins) {
  SRT_ASSIGN_OR_RETURN(const ir::Graph* body, body_of(node));
  const size_t formal = node.inputs.size() - static_cast<size_t>(std::max(0, body->num_captures));
  SRT_ASSIGN_OR_RETURN(SeqValue first, seq_input(node, ins, 0, kind_bit(ValueKind::kSequence)));
  const size_t n = first.items.size();
  // Per formal input: its elements when the body takes them one at a time.
  std::vector<std::optional<SeqValue>> per_elem(formal);
  per_elem[0] = std::move(first);
  for (size_t k = 1; k < formal; ++k) {
    if (ins[k].empty() || !body_takes_tensor(*body, k)) continue;
    auto s = decode_seq(ins[k], "input " + std::to_string(k));
    if (!s.ok() || s->kind != ValueKind::kSequence) continue;  // a tensor: passed whole
    if (s->items.size() != n)
      return node.error(StatusCode::kInvalidArgument, "input " + std::to_string(k) + " holds " +
                                                          std::to_string(s->items.size()) + " tensors, input_sequence " +
                                                          std::to_string(n));
    per_elem[k] = std::move(s).value();
  }
  std::vector<SeqValue> outs(node.outputs.size());
  for (size_t j = 0; j < outs.size(); ++j) {
    const ir::Value& bv = body->value(body->outputs[j]);
    outs[j].elem_dtype = bv.seq.is_tensor() ? bv.dtype : bv.seq.elem_dtype;
  }
  std::vector<Tensor> body_in = ins;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < formal; ++k)
      if (per_elem[k]) body_in[k] = per_elem[k]->items[i];
    auto r = run_body(*body, body_in);
    if (!r.ok()) return r.status().with_context(node.describe() + " element " + std::to_string(i));
    for (size_t j = 0; j < outs.size(); ++j) {
      Tensor& t = (*r)[j];
      if (t.dtype() != outs[j].elem_dtype && outs[j].elem_dtype != DataType::kUndefined)
        return node.error(StatusCode::kInvalidArgument, "body output " + std::to_string(j) + " is " + dtype_name(t.dtype()) +
                                                            ", declared " + dtype_name(outs[j].elem_dtype));
      outs[j].elem_dtype = t.dtype();
      outs[j].items.push_back(std::move(t));
    }
  }
  std::vector<Tensor> result;
  for (SeqValue& s : outs) {
    if (s.elem_dtype == DataType::kUndefined)
      return node.error(StatusCode::kInvalidModel, "a body output has no known element type");
    SRT_ASSIGN_OR_RETURN(Tensor blob, encode_seq(s));
    result.push_back(std::move(blob));
  }
  return result;
}

Status verify(const InferContext& ctx) { return body_of(ctx.node()).status(); }

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(const ir::Graph* body, body_of(ctx.node()));
  if (!ctx.has_input(0) || seq_input_info(ctx, 0).seq.kind != ValueKind::kSequence)
    return ctx.error("input_sequence must be a sequence");
  const size_t formal = ctx.num_inputs() - static_cast<size_t>(std::max(0, body->num_captures));
  std::vector<TensorInfo> ins(ctx.num_inputs());
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    ins[k] = ctx.has_input(k) ? seq_input_info(ctx, k) : ctx.input(k);
    ins[k].partial = nullptr;
    if (k < formal && ins[k].seq.kind == ValueKind::kSequence && body_takes_tensor(*body, k)) ins[k] = elem_info(ins[k]);
  }
  std::vector<TensorInfo> types;
  SRT_ASSIGN_OR_RETURN(auto outs, infer_body(ctx.node(), *body, ins));
  for (const TensorInfo& o : outs) {
    if (!o.seq.is_tensor()) return ctx.error("a body output is a " + std::string(value_kind_name(o.seq.kind)) + ", not a tensor");
    types.push_back(seq_info(seq_type(ValueKind::kSequence, o.dtype, o.dims, o.has_shape)));
  }
  return infer_seq_op(ctx, types, run);
}

Status cpu(KernelContext& ctx) { return run_seq_kernel(ctx, run); }

}  // namespace

STREAMRT_REGISTER_OP(SequenceMap, {.op_type = "SequenceMap", .min_opset = 17, .infer = infer, .cpu = cpu, .verify = verify,
                                   .cpu_dtypes = kAnyDType, .dtype_input = -1});

}  // namespace streamrt::ops
