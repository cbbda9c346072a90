// Optional (opset 15+), OptionalHasElement and OptionalGetElement (opset 15; 18 lets both take a
// plain tensor or sequence, and OptionalHasElement an omitted input). Host kernels over the
// sequence encoding (ops/sequence_value.h). Optional's `type` attribute (an ONNX TypeProto) is
// imported as INTS [kind, dtype, has_shape, rank, dims...] (onnx/importer.cc type_attr).
// OptionalGetElement of an empty optional is an error naming the node.
#include "ops/common.h"
#include "ops/sequence_value.h"

namespace streamrt::ops {
namespace {

constexpr unsigned kOptionals = kind_bit(ValueKind::kOptionalTensor) | kind_bit(ValueKind::kOptionalSequence);

// The optional kind holding a value of type `t`.
ValueKind optional_of(const ir::SeqType& t) {
  return t.kind == ValueKind::kSequence ? ValueKind::kOptionalSequence : ValueKind::kOptionalTensor;
}

// Optional's `type` attribute: what an empty optional would hold.
Result<ir::SeqType> type_attr(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> v, node.attr_ints("type"));
  if (v.size() < 4 || v[0] < 0 || v[0] > static_cast<int64_t>(ValueKind::kSequence) || v[1] <= 0 ||
      !is_valid_dtype(static_cast<int>(std::min<int64_t>(v[1], 255))) || v[3] < 0 ||
      v.size() != 4 + static_cast<size_t>(v[3]))
    return node.error(StatusCode::kInvalidModel, "attribute 'type' is not a tensor or sequence type");
  Dims dims(v.begin() + 4, v.end());
  for (int64_t d : dims)
    if (d < kDynamicDim) return node.error(StatusCode::kInvalidModel, "attribute 'type' has a negative dim");
  return seq_type(static_cast<ValueKind>(v[0]), static_cast<DataType>(v[1]), dims, v[2] != 0);
}

// Input 0 as an optional value (a plain sequence counts as a present one).
Result<SeqValue> as_optional(const Tensor& t) {
  auto v = decode_seq(t, "input 0");
  if (!v.ok()) {  // a plain tensor (opset 18)
    SeqValue s;
    s.kind = ValueKind::kOptionalTensor;
    s.elem_dtype = t.dtype();
    s.items.push_back(t);
    return s;
  }
  if (v->kind == ValueKind::kSequence) v->kind = ValueKind::kOptionalSequence;
  return v;
}

// ---- Optional ----
Result<std::vector<Tensor>> run_optional(const ir::Node& node, const std::vector<Tensor>& ins) {
  SeqValue v;
  if (ins.empty() || ins[0].empty()) {
    SRT_ASSIGN_OR_RETURN(ir::SeqType t, type_attr(node));
    v.kind = t.kind == ValueKind::kSequence ? ValueKind::kOptionalSequence : ValueKind::kOptionalTensor;
    v.has_value = false;
    v.elem_dtype = t.elem_dtype;
  } else if (auto s = decode_seq(ins[0], "input 0"); s.ok() && s->kind == ValueKind::kSequence) {
    v = std::move(s).value();
    v.kind = ValueKind::kOptionalSequence;
  } else {
    v.kind = ValueKind::kOptionalTensor;
    v.elem_dtype = ins[0].dtype();
    v.items.push_back(ins[0]);
  }
  SRT_ASSIGN_OR_RETURN(Tensor blob, encode_seq(v));
  return std::vector<Tensor>{std::move(blob)};
}

Status infer_optional(InferContext& ctx) {
  ir::SeqType t;
  if (ctx.has_input(0)) {
    const TensorInfo in = seq_input_info(ctx, 0);
    if (in.seq.kind == ValueKind::kSequence) t = in.seq;
    else if (in.seq.is_tensor()) t = seq_type(ValueKind::kTensor, in.dtype, in.dims, in.has_shape);
    else return ctx.error("input is already an optional");
  } else {
    SRT_ASSIGN_OR_RETURN(ir::SeqType a, type_attr(ctx.node()));
    t = a.kind == ValueKind::kSequence ? a : seq_type(ValueKind::kTensor, a.elem_dtype, a.elem_dims, a.elem_has_shape);
  }
  t.kind = optional_of(t);
  return infer_seq_op(ctx, {seq_info(t)}, run_optional);
}

// ---- OptionalHasElement ----
Result<std::vector<Tensor>> run_has(const ir::Node& node, const std::vector<Tensor>& ins) {
  bool has = false;
  if (!ins.empty() && !ins[0].empty()) {
    SRT_ASSIGN_OR_RETURN(SeqValue v, as_optional(ins[0]));
    has = v.has_value;
  }
  return std::vector<Tensor>{Tensor::from_vector<uint8_t>(DataType::kBool, {}, {static_cast<uint8_t>(has)})};
}
Status infer_has(InferContext& ctx) {
  return infer_seq_op(ctx, {TensorInfo{DataType::kBool, {}, true, nullptr, nullptr, {}}}, run_has);
}

// ---- OptionalGetElement ----
Result<std::vector<Tensor>> run_get(const ir::Node& node, const std::vector<Tensor>& ins) {
  if (ins.empty() || ins[0].empty()) return node.error(StatusCode::kInvalidArgument, "input is missing");
  SRT_ASSIGN_OR_RETURN(SeqValue v, as_optional(ins[0]));
  if (!v.has_value) return node.error(StatusCode::kInvalidArgument, "the optional input holds no value");
  if (v.kind == ValueKind::kOptionalTensor) return std::vector<Tensor>{v.items.at(0)};
  v.kind = ValueKind::kSequence;
  SRT_ASSIGN_OR_RETURN(Tensor blob, encode_seq(v));
  return std::vector<Tensor>{std::move(blob)};
}
Status infer_get(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("input is missing");
  const TensorInfo in = seq_input_info(ctx, 0);
  TensorInfo out;
  switch (in.seq.kind) {
    case ValueKind::kOptionalTensor: out = elem_info(in); break;
    case ValueKind::kOptionalSequence: out = seq_info(seq_type(ValueKind::kSequence, in.seq.elem_dtype, in.seq.elem_dims, in.seq.elem_has_shape)); break;
    default: out = in; out.value = nullptr; out.partial = nullptr; break;  // opset 18: a tensor or sequence as is
  }
  return infer_seq_op(ctx, {out}, run_get);
}

Status cpu_optional(KernelContext& ctx) { return run_seq_kernel(ctx, run_optional); }
Status cpu_has(KernelContext& ctx) { return run_seq_kernel(ctx, run_has); }
Status cpu_get(KernelContext& ctx) { return run_seq_kernel(ctx, run_get); }

}  // namespace

STREAMRT_REGISTER_OP(Optional, {.op_type = "Optional", .min_opset = 15, .infer = infer_optional, .cpu = cpu_optional,
                                .cpu_dtypes = kAnyDType, .dtype_input = -1});
STREAMRT_REGISTER_OP(OptionalHasElement, {.op_type = "OptionalHasElement", .min_opset = 15, .infer = infer_has,
                                          .cpu = cpu_has, .cpu_dtypes = kAnyDType, .dtype_input = -1});
STREAMRT_REGISTER_OP(OptionalGetElement, {.op_type = "OptionalGetElement", .min_opset = 15, .infer = infer_get,
                                          .cpu = cpu_get, .cpu_dtypes = kAnyDType, .dtype_input = -1});

}  // namespace streamrt::ops
