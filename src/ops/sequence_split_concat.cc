// SplitToSequence and ConcatFromSequence (opset 11+), host kernels over the sequence encoding
// (ops/sequence_value.h). SplitToSequence: `split` omitted cuts pieces of 1 along `axis` (squeezed
// away when keepdims = 0), a scalar cuts pieces of that length (the last one shorter), a 1-D
// tensor gives the lengths (summing to the axis). The spec ignores keepdims when split is given,
// but the TorchScript exporter writes unbind as split = scalar 1, keepdims = 0 and means the
// pieces squeezed, as onnxruntime does: so a scalar split of 1 honours keepdims too. ConcatFromSequence joins along `axis`, or along
// a new axis (new_axis = 1, axis then in [-rank - 1, rank]); an empty sequence is an error.
#include <cstring>

#include "ops/common.h"
#include "ops/sequence_value.h"
#include "ops/subgraph_exec.h"

namespace streamrt::ops {
namespace {

// Rows of `t` [begin, begin + len) along `axis`.
Result<Tensor> slice_axis(const Tensor& t, size_t axis, int64_t begin, int64_t len) {
  const Dims& d = t.dims();
  Dims od = d;
  od[axis] = len;
  SRT_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(t.dtype(), od));
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(t.dtype()));
  for (size_t k = 0; k < axis; ++k) outer *= d[k];
  for (size_t k = axis + 1; k < d.size(); ++k) inner *= d[k];
  const auto* src = static_cast<const uint8_t*>(t.data());
  auto* dst = static_cast<uint8_t*>(out.mutable_data());
  const int64_t chunk = len * inner;
  for (int64_t o = 0; o < outer && chunk > 0; ++o)
    std::memcpy(dst + o * chunk, src + (o * d[axis] + begin) * inner, static_cast<size_t>(chunk));
  return out;
}

Result<std::vector<int64_t>> piece_lengths(const ir::Node& node, const Tensor* split, int64_t dim) {
  std::vector<int64_t> lens;
  if (!split) return std::vector<int64_t>(static_cast<size_t>(dim), 1);
  if (split->dtype() != DataType::kInt64 && split->dtype() != DataType::kInt32)
    return node.error(StatusCode::kInvalidArgument, "split must be int32 / int64");
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> v, split->to_int64_vector());
  if (split->dims().empty()) {
    if (v[0] <= 0) return node.error(StatusCode::kInvalidArgument, "split " + std::to_string(v[0]) + " must be positive");
    for (int64_t at = 0; at < dim; at += v[0]) lens.push_back(std::min(v[0], dim - at));
    return lens;
  }
  if (split->dims().size() != 1) return node.error(StatusCode::kInvalidArgument, "split must be a scalar or 1-D");
  int64_t sum = 0;
  for (int64_t x : v) {
    if (x < 0 || x > dim) return node.error(StatusCode::kInvalidArgument, "split length " + std::to_string(x) + " is invalid");
    sum += x;
  }
  if (sum != dim)
    return node.error(StatusCode::kInvalidArgument, "split lengths sum to " + std::to_string(sum) + ", the axis has " +
                                                        std::to_string(dim));
  return v;
}

// Whether keepdims = 0 squeezes the pieces: split omitted, or the scalar 1 (see the top).
bool squeezes(const Tensor* split) {
  if (!split) return true;
  auto v = split->to_int64_vector();
  return split->dims().empty() && v.ok() && (*v)[0] == 1;
}

Result<std::vector<Tensor>> run_split(const ir::Node& node, const std::vector<Tensor>& ins) {
  const Tensor& x = ins[0];
  if (x.dims().empty()) return node.error(StatusCode::kInvalidArgument, "cannot split a scalar");
  SRT_ASSIGN_OR_RETURN(int64_t axis_attr, node.attr_int("axis", 0));
  SRT_ASSIGN_OR_RETURN(int64_t keepdims, node.attr_int("keepdims", 1));
  SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, static_cast<int64_t>(x.dims().size())));
  const Tensor* split = ins.size() > 1 && !ins[1].empty() ? &ins[1] : nullptr;
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> lens, piece_lengths(node, split, x.dims()[axis]));
  SeqValue v;
  v.elem_dtype = x.dtype();
  int64_t at = 0;
  for (int64_t len : lens) {
    SRT_ASSIGN_OR_RETURN(Tensor piece, slice_axis(x, static_cast<size_t>(axis), at, len));
    at += len;
    if (keepdims == 0 && squeezes(split)) {
      Dims d = piece.dims();
      d.erase(d.begin() + axis);
      SRT_ASSIGN_OR_RETURN(piece, piece.reshaped(d));
    }
    v.items.push_back(std::move(piece));
  }
  SRT_ASSIGN_OR_RETURN(Tensor blob, encode_seq(v));
  return std::vector<Tensor>{std::move(blob)};
}

Status infer_split(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("input is missing");
  const TensorInfo& x = ctx.input(0);
  if (!x.seq.is_tensor()) return ctx.error("input must be a tensor");
  if (ctx.has_input(1)) SRT_RETURN_IF_ERROR(require_input(ctx, 1, kSignedInts));
  ir::SeqType t = seq_type(ValueKind::kSequence, x.dtype, {}, false);
  if (x.has_shape && x.dims.empty()) return ctx.error("cannot split a scalar");
  if (x.has_shape) {
    SRT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.node().attr_int("axis", 0));
    SRT_ASSIGN_OR_RETURN(int64_t keepdims, ctx.node().attr_int("keepdims", 1));
    SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, axis_attr, static_cast<int64_t>(x.dims.size())));
    Dims d = x.dims;
    const bool ones = !ctx.has_input(1) || (ctx.input_value(1) && squeezes(ctx.input_value(1)));
    if (ones && keepdims == 0) d.erase(d.begin() + axis);
    else d[axis] = ones ? 1 : kDynamicDim;
    const bool rank_known = ctx.has_input(1) ? ctx.input_value(1) != nullptr || keepdims != 0 : true;
    t = seq_type(ValueKind::kSequence, x.dtype, d, rank_known);
  }
  return infer_seq_op(ctx, {seq_info(t)}, run_split);
}

Result<int64_t> concat_axis(const ir::Node& node, int64_t rank) {
  SRT_ASSIGN_OR_RETURN(int64_t axis, node.attr_int("axis"));
  SRT_ASSIGN_OR_RETURN(int64_t new_axis, node.attr_int("new_axis", 0));
  if (new_axis != 0 && new_axis != 1)
    return node.error(StatusCode::kInvalidModel, "new_axis must be 0 or 1, got " + std::to_string(new_axis));
  return normalize_axis(node, axis, rank + new_axis);
}

Result<std::vector<Tensor>> run_concat(const ir::Node& node, const std::vector<Tensor>& ins) {
  SRT_ASSIGN_OR_RETURN(SeqValue v, seq_input(node, ins, 0, kind_bit(ValueKind::kSequence)));
  if (v.items.empty()) return node.error(StatusCode::kInvalidArgument, "cannot concatenate an empty sequence");
  const Dims& d0 = v.items[0].dims();
  const int64_t rank = static_cast<int64_t>(d0.size());
  SRT_ASSIGN_OR_RETURN(int64_t axis, concat_axis(node, rank));
  SRT_ASSIGN_OR_RETURN(int64_t new_axis, node.attr_int("new_axis", 0));
  if (new_axis) {
    auto out = stack_slices(v.items, axis, v.elem_dtype, d0, node.describe());
    if (!out.ok()) return node.error(StatusCode::kInvalidArgument, out.status().message());
    return std::vector<Tensor>{std::move(out).value()};
  }
  if (rank == 0) return node.error(StatusCode::kInvalidArgument, "cannot concatenate scalars without new_axis");
  Dims od = d0;
  od[axis] = 0;
  for (size_t i = 0; i < v.items.size(); ++i) {
    const Dims& d = v.items[i].dims();
    bool same = d.size() == d0.size();
    for (size_t k = 0; same && k < d.size(); ++k) same = static_cast<int64_t>(k) == axis || d[k] == d0[k];
    if (!same)
      return node.error(StatusCode::kInvalidArgument, "tensor " + std::to_string(i) + " is " + dims_to_string(d) +
                                                          ", tensor 0 " + dims_to_string(d0) + ": they differ off axis " +
                                                          std::to_string(axis));
    od[axis] += d[axis];
  }
  SRT_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(v.elem_dtype, od));
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(v.elem_dtype));
  for (int64_t k = 0; k < axis; ++k) outer *= od[k];
  for (int64_t k = axis + 1; k < rank; ++k) inner *= od[k];
  auto* dst = static_cast<uint8_t*>(out.mutable_data());
  int64_t at = 0;
  for (const Tensor& t : v.items) {
    const int64_t chunk = t.dims()[axis] * inner;
    const auto* src = static_cast<const uint8_t*>(t.data());
    for (int64_t o = 0; o < outer && chunk > 0; ++o)
      std::memcpy(dst + (o * od[axis] + at) * inner, src + o * chunk, static_cast<size_t>(chunk));
    at += t.dims()[axis];
  }
  return std::vector<Tensor>{std::move(out)};
}

Status infer_concat(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("input is missing");
  const TensorInfo s = seq_input_info(ctx, 0);
  if (s.seq.kind != ValueKind::kSequence) return ctx.error("input must be a sequence");
  TensorInfo out{s.seq.elem_dtype, {}, false, nullptr, nullptr, {}};
  if (s.seq.elem_has_shape) {
    SRT_ASSIGN_OR_RETURN(int64_t axis, concat_axis(ctx.node(), static_cast<int64_t>(s.seq.elem_dims.size())));
    SRT_ASSIGN_OR_RETURN(int64_t new_axis, ctx.node().attr_int("new_axis", 0));
    out.dims = s.seq.elem_dims;
    if (new_axis) out.dims.insert(out.dims.begin() + axis, kDynamicDim);
    else out.dims[axis] = kDynamicDim;
    out.has_shape = true;
  }
  return infer_seq_op(ctx, {out}, run_concat);
}

Status cpu_split(KernelContext& ctx) { return run_seq_kernel(ctx, run_split); }
Status cpu_concat(KernelContext& ctx) { return run_seq_kernel(ctx, run_concat); }

}  // namespace

STREAMRT_REGISTER_OP(SplitToSequence, {.op_type = "SplitToSequence", .min_opset = 11, .infer = infer_split,
                                       .cpu = cpu_split, .cpu_dtypes = kAnyDType, .dtype_input = 0});
STREAMRT_REGISTER_OP(ConcatFromSequence, {.op_type = "ConcatFromSequence", .min_opset = 11, .infer = infer_concat,
                                          .cpu = cpu_concat, .cpu_dtypes = kAnyDType, .dtype_input = -1});

}  // namespace streamrt::ops
