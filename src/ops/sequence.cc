// Sequence ops (ONNX opset 11+): SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase,
// SequenceAt, SequenceLength. Host kernels over the sequence encoding (ops/sequence_value.h); a
// builder pass (builder/fold_sequences.cc) turns the statically known ones into tensor ops first.
// Positions may be negative (counted from the end); out of range is an error naming the node.
#include "ops/common.h"
#include "ops/sequence_value.h"
#include "onnx/tensor_proto.h"

namespace streamrt::ops {
namespace {

constexpr unsigned kSeqOnly = kind_bit(ValueKind::kSequence);

// Input k must be a sequence (when its type is known at all).
Result<TensorInfo> seq_arg(const InferContext& ctx, size_t k) {
  if (!ctx.has_input(k)) return ctx.error("input " + std::to_string(k) + " (a sequence) is missing");
  TensorInfo in = seq_input_info(ctx, k);
  if (in.seq.kind != ValueKind::kSequence)
    return ctx.error("input " + std::to_string(k) + " is a " + value_kind_name(in.seq.kind) + ", not a sequence");
  return in;
}

ir::SeqType tensor_as_elem(const TensorInfo& t) { return seq_type(ValueKind::kSequence, t.dtype, t.dims, t.has_shape); }

Status check_elem(const InferContext& ctx, const TensorInfo& seq, const TensorInfo& t) {
  if (!t.seq.is_tensor()) return ctx.error("the element to insert is a " + std::string(value_kind_name(t.seq.kind)));
  if (seq.seq.elem_dtype != t.dtype)
    return ctx.error(std::string("a ") + dtype_name(t.dtype) + " tensor cannot join a sequence of " +
                     dtype_name(seq.seq.elem_dtype));
  return ok_status();
}

Result<Tensor> one(const SeqValue& v) { return encode_seq(v); }
Result<std::vector<Tensor>> single(Result<Tensor> t) {
  if (!t.ok()) return t.status();
  return std::vector<Tensor>{std::move(t).value()};
}

// Position `pos` of a sequence of n elements into [0, n + extra): insert allows n itself.
Result<size_t> position(const ir::Node& node, int64_t pos, size_t n, bool allow_end) {
  const int64_t len = static_cast<int64_t>(n);
  const int64_t hi = allow_end ? len : len - 1;
  if (pos < -len || pos > hi)
    return node.error(StatusCode::kInvalidArgument, "position " + std::to_string(pos) + " is outside [" +
                                                        std::to_string(-len) + ", " + std::to_string(hi) +
                                                        "] for a sequence of " + std::to_string(n) + " tensors");
  return static_cast<size_t>(pos < 0 ? pos + len : pos);
}

// ---- SequenceEmpty ----
Result<DataType> empty_dtype(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t t, node.attr_int("dtype", 1));
  return onnx_import::dtype_from_onnx(static_cast<int>(t), node.describe() + " attribute 'dtype'");
}
Result<std::vector<Tensor>> run_empty(const ir::Node& node, const std::vector<Tensor>&) {
  SeqValue v;
  SRT_ASSIGN_OR_RETURN(v.elem_dtype, empty_dtype(node));
  return single(one(v));
}
Status infer_empty(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(DataType dt, empty_dtype(ctx.node()));
  return infer_seq_op(ctx, {seq_info(seq_type(ValueKind::kSequence, dt, {}, false))}, run_empty);
}

// ---- SequenceConstruct ----
Result<std::vector<Tensor>> run_construct(const ir::Node& node, const std::vector<Tensor>& ins) {
  SeqValue v;
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].empty()) return node.error(StatusCode::kInvalidArgument, "input " + std::to_string(k) + " is missing");
    if (k && ins[k].dtype() != ins[0].dtype())
      return node.error(StatusCode::kInvalidArgument, "inputs mix " + std::string(dtype_name(ins[0].dtype())) + " and " +
                                                          dtype_name(ins[k].dtype()));
    v.items.push_back(ins[k]);
  }
  if (v.items.empty()) return node.error(StatusCode::kInvalidModel, "needs at least one input");
  v.elem_dtype = ins[0].dtype();
  return single(one(v));
}
Status infer_construct(InferContext& ctx) {
  if (ctx.num_inputs() == 0 || !ctx.has_input(0)) return ctx.error("needs at least one input");
  ir::SeqType t = tensor_as_elem(ctx.input(0));
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (!ctx.has_input(k)) return ctx.error("input " + std::to_string(k) + " is missing");
    if (ctx.input_dtype(k) != t.elem_dtype)
      return ctx.error(std::string("inputs mix ") + dtype_name(t.elem_dtype) + " and " + dtype_name(ctx.input_dtype(k)));
    t = merge_seq_types(t, tensor_as_elem(ctx.input(k)));
  }
  return infer_seq_op(ctx, {seq_info(t)}, run_construct);
}

// ---- SequenceInsert ----
Result<std::vector<Tensor>> run_insert(const ir::Node& node, const std::vector<Tensor>& ins) {
  SRT_ASSIGN_OR_RETURN(SeqValue v, seq_input(node, ins, 0, kSeqOnly));
  if (ins.size() < 2 || ins[1].empty()) return node.error(StatusCode::kInvalidArgument, "the tensor to insert is missing");
  if (ins[1].dtype() != v.elem_dtype)
    return node.error(StatusCode::kInvalidArgument, std::string("a ") + dtype_name(ins[1].dtype()) +
                                                        " tensor cannot join a sequence of " + dtype_name(v.elem_dtype));
  size_t at = v.items.size();
  if (ins.size() > 2 && !ins[2].empty()) {
    SRT_ASSIGN_OR_RETURN(int64_t pos, scalar_index(node, ins[2], "position"));
    SRT_ASSIGN_OR_RETURN(at, position(node, pos, v.items.size(), true));
  }
  v.items.insert(v.items.begin() + static_cast<std::ptrdiff_t>(at), ins[1]);
  return single(one(v));
}
Status infer_insert(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(TensorInfo s, seq_arg(ctx, 0));
  if (!ctx.has_input(1)) return ctx.error("the tensor to insert is missing");
  SRT_RETURN_IF_ERROR(check_elem(ctx, s, ctx.input(1)));
  if (ctx.has_input(2)) SRT_RETURN_IF_ERROR(require_input(ctx, 2, kSignedInts));
  // An empty sequence's elements have no shape yet: the first insert gives them one.
  ir::SeqType t = s.seq.elem_has_shape ? merge_seq_types(s.seq, tensor_as_elem(ctx.input(1))) : s.seq;
  return infer_seq_op(ctx, {seq_info(t)}, run_insert);
}

// ---- SequenceErase ----
Result<std::vector<Tensor>> run_erase(const ir::Node& node, const std::vector<Tensor>& ins) {
  SRT_ASSIGN_OR_RETURN(SeqValue v, seq_input(node, ins, 0, kSeqOnly));
  if (v.items.empty()) return node.error(StatusCode::kInvalidArgument, "cannot erase from an empty sequence");
  size_t at = v.items.size() - 1;
  if (ins.size() > 1 && !ins[1].empty()) {
    SRT_ASSIGN_OR_RETURN(int64_t pos, scalar_index(node, ins[1], "position"));
    SRT_ASSIGN_OR_RETURN(at, position(node, pos, v.items.size(), false));
  }
  v.items.erase(v.items.begin() + static_cast<std::ptrdiff_t>(at));
  return single(one(v));
}
Status infer_erase(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(TensorInfo s, seq_arg(ctx, 0));
  if (ctx.has_input(1)) SRT_RETURN_IF_ERROR(require_input(ctx, 1, kSignedInts));
  return infer_seq_op(ctx, {seq_info(s.seq)}, run_erase);
}

// ---- SequenceAt ----
Result<std::vector<Tensor>> run_at(const ir::Node& node, const std::vector<Tensor>& ins) {
  SRT_ASSIGN_OR_RETURN(SeqValue v, seq_input(node, ins, 0, kSeqOnly));
  if (ins.size() < 2 || ins[1].empty()) return node.error(StatusCode::kInvalidArgument, "position is missing");
  SRT_ASSIGN_OR_RETURN(int64_t pos, scalar_index(node, ins[1], "position"));
  SRT_ASSIGN_OR_RETURN(size_t at, position(node, pos, v.items.size(), false));
  return std::vector<Tensor>{v.items[at]};
}
Status infer_at(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(TensorInfo s, seq_arg(ctx, 0));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kSignedInts));
  return infer_seq_op(ctx, {elem_info(s)}, run_at);
}

// ---- SequenceLength ----
Result<std::vector<Tensor>> run_length(const ir::Node& node, const std::vector<Tensor>& ins) {
  SRT_ASSIGN_OR_RETURN(SeqValue v, seq_input(node, ins, 0, kSeqOnly));
  return std::vector<Tensor>{Tensor::from_vector<int64_t>(DataType::kInt64, {}, {static_cast<int64_t>(v.items.size())})};
}
Status infer_length(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(seq_arg(ctx, 0).status());
  return infer_seq_op(ctx, {TensorInfo{DataType::kInt64, {}, true, nullptr, nullptr, {}}}, run_length);
}

Status cpu_empty(KernelContext& ctx) { return run_seq_kernel(ctx, run_empty); }
Status cpu_construct(KernelContext& ctx) { return run_seq_kernel(ctx, run_construct); }
Status cpu_insert(KernelContext& ctx) { return run_seq_kernel(ctx, run_insert); }
Status cpu_erase(KernelContext& ctx) { return run_seq_kernel(ctx, run_erase); }
Status cpu_at(KernelContext& ctx) { return run_seq_kernel(ctx, run_at); }
Status cpu_length(KernelContext& ctx) { return run_seq_kernel(ctx, run_length); }

}  // namespace

// dtype_input -1: the main tensor is the output (a sequence: uint8 bytes), any element type.
STREAMRT_REGISTER_OP(SequenceEmpty, {.op_type = "SequenceEmpty", .min_opset = 11, .infer = infer_empty, .cpu = cpu_empty,
                                     .cpu_dtypes = kAnyDType, .dtype_input = -1, .output_dtype_attr = "dtype",
                                     .output_dtype_defaults_to_float = true});
STREAMRT_REGISTER_OP(SequenceConstruct, {.op_type = "SequenceConstruct", .min_opset = 11, .infer = infer_construct,
                                         .cpu = cpu_construct, .cpu_dtypes = kAnyDType, .dtype_input = -1});
STREAMRT_REGISTER_OP(SequenceInsert, {.op_type = "SequenceInsert", .min_opset = 11, .infer = infer_insert,
                                      .cpu = cpu_insert, .cpu_dtypes = kAnyDType, .dtype_input = -1});
STREAMRT_REGISTER_OP(SequenceErase, {.op_type = "SequenceErase", .min_opset = 11, .infer = infer_erase, .cpu = cpu_erase,
                                     .cpu_dtypes = kAnyDType, .dtype_input = -1});
STREAMRT_REGISTER_OP(SequenceAt, {.op_type = "SequenceAt", .min_opset = 11, .infer = infer_at, .cpu = cpu_at,
                                  .cpu_dtypes = kAnyDType, .dtype_input = -1});
STREAMRT_REGISTER_OP(SequenceLength, {.op_type = "SequenceLength", .min_opset = 11, .infer = infer_length,
                                      .cpu = cpu_length, .cpu_dtypes = kAnyDType, .dtype_input = -1});

}  // namespace streamrt::ops
