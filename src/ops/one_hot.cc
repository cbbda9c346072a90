// OneHot (opsets 9, 11): output[..., d, ...] (d on the inserted axis `axis`, default -1 = last)
// is values[1] (on) where d is the index at that position, values[0] (off) elsewhere. indices:
// any numeric type (floats truncate toward zero); depth: a one-element numeric tensor, read as
// a shape input because it is the new axis's length; values: [off, on], whose type the output
// takes. Indices outside [0, depth) (opset 9) or [-depth, depth) (opset 11: negatives count
// from the end) light nothing.
#include "ops/one_hot.h"

#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

Result<int64_t> one_hot_depth(const ir::Node& node, StatusCode code, DataType t, const void* data, int64_t numel) {
  if (numel != 1) return node.error(code, "depth must hold one value, got " + std::to_string(numel));
  int64_t depth = 0;
  SRT_RETURN_IF_ERROR(dispatch<kNumeric>(t, node.describe() + " depth", [&]<typename T>() {
    depth = one_hot_index(load(*static_cast<const T*>(data)));
    return ok_status();
  }));
  if (depth < 0 || depth > kMaxOneHotDepth)
    return node.error(code, "depth " + std::to_string(depth) + " is outside [0, " + std::to_string(kMaxOneHotDepth) +
                                "]");
  return depth;
}

Result<int64_t> one_hot_axis(const ir::Node& node, int64_t indices_rank) {
  SRT_ASSIGN_OR_RETURN(int64_t axis, node.attr_int("axis", -1));
  return normalize_axis(node, axis, indices_rank + 1);
}

namespace {

constexpr int kNegativeIndicesSince = 11;

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kNumeric));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kNumeric));
  SRT_RETURN_IF_ERROR(require_input(ctx, 2, kAll));
  const DataType dt = ctx.input_dtype(2);
  const TensorInfo& depth = ctx.input(1);
  if (depth.has_shape && dims_product_or_dynamic(depth.dims, 0, depth.dims.size()) > 1)
    return ctx.error("depth must hold one value, got shape " + dims_to_string(depth.dims));
  const TensorInfo& values = ctx.input(2);
  if (values.has_shape && dims_product_or_dynamic(values.dims, 0, values.dims.size()) >= 0 &&
      dims_product_or_dynamic(values.dims, 0, values.dims.size()) != 2)
    return ctx.error("values must hold [off, on], got shape " + dims_to_string(values.dims));
  const TensorInfo& idx = ctx.input(0);
  if (!idx.has_shape) {
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(int64_t axis, one_hot_axis(ctx.node(), static_cast<int64_t>(idx.dims.size())));
  int64_t n = kDynamicDim;
  if (const Tensor* v = ctx.input_value(1)) {
    SRT_ASSIGN_OR_RETURN(n, one_hot_depth(ctx.node(), StatusCode::kInvalidModel, v->dtype(), v->data(), v->numel()));
  }
  Dims out = idx.dims;
  out.insert(out.begin() + axis, n);
  if (dims_product_or_dynamic(out, 0, out.size()) < 0 && dims_product_or_dynamic(idx.dims, 0, idx.dims.size()) >= 0 &&
      n >= 0)
    return ctx.error("output " + dims_to_string(out) + " has more than 2^63 elements");
  ctx.set_output(0, dt, std::move(out));
  return ok_status();
}

// Plan load: axis within the output's rank (the kernel strides over it).
Status verify(const InferContext& ctx) { return verify_axis_attr(ctx, "axis", -1, 0, 1); }

Result<std::vector<int64_t>> slots(const KernelContext& ctx, const TensorRef& idx, int64_t depth) {
  std::vector<int64_t> out(static_cast<size_t>(idx.numel()));
  const bool wrap = ctx.opset() >= kNegativeIndicesSince;
  SRT_RETURN_IF_ERROR(dispatch<kNumeric>(idx.dtype, ctx.node().describe() + " indices", [&]<typename T>() {
    for (size_t k = 0; k < out.size(); ++k) out[k] = one_hot_slot(one_hot_index(load(idx.as<const T>()[k])), depth, wrap);
    return ok_status();
  }));
  return out;
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 3));
  const TensorRef& idx = ctx.input(0);
  const TensorRef& values = ctx.input(2);
  const TensorRef& y = ctx.output(0);
  const TensorRef& d = ctx.input(1);
  SRT_ASSIGN_OR_RETURN(int64_t depth, one_hot_depth(ctx.node(), StatusCode::kInvalidArgument, d.dtype, d.data, d.numel()));
  const int64_t rank = static_cast<int64_t>(idx.dims.size());
  SRT_ASSIGN_OR_RETURN(int64_t axis, one_hot_axis(ctx.node(), rank));
  if (values.numel() != 2) return ctx.error("values must hold [off, on], got shape " + dims_to_string(values.dims));
  Dims out = idx.dims;
  out.insert(out.begin() + axis, depth);
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, values.dtype, out));
  SRT_ASSIGN_OR_RETURN(auto slot, slots(ctx, idx, depth));
  const size_t es = dtype_size(values.dtype);
  const char* off = static_cast<const char*>(values.data);
  char* dst = static_cast<char*>(y.data);
  for (int64_t i = 0, n = y.numel(); i < n; ++i) std::memcpy(dst + i * es, off, es);
  // Index k = (o, i) with i over the dims after the axis lights output (o, slot, i).
  const int64_t inner = dims_product(idx.dims, static_cast<size_t>(axis), idx.dims.size());
  for (int64_t k = 0; k < static_cast<int64_t>(slot.size()); ++k) {
    if (slot[k] < 0) continue;
    const int64_t pos = ((k / inner) * depth + slot[k]) * inner + k % inner;
    std::memcpy(dst + pos * es, off + es, es);
  }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(OneHot, {.op_type = "OneHot", .min_opset = 9, .infer = infer, .cpu = cpu, .verify = verify,
                              .shape_inputs = {1}, .cpu_dtypes = dtypes(kNumeric)});

}  // namespace streamrt::ops
