// Expand (opset 8): numpy (bidirectional) broadcast of the input to the int64 1-D `shape`
// input: a 1 in `shape` keeps the input's dim, so the output may be larger than `shape`.
// Copies elements by size, so every data type is supported.
#include <cstring>

#include "ops/common.h"

namespace streamrt::ops {
namespace {

Status check_shape_values(const ir::Node& node, const std::vector<int64_t>& shape) {
  for (int64_t v : shape)
    if (v < 0) return node.error(StatusCode::kInvalidModel, "shape " + dims_to_string(shape) + " has a negative dim");
  return ok_status();
}

// Output dims when `shape` has `len` entries of unknown value: a dim > 1 of the input survives
// (the shape entry must be 1 or equal to it); everything else is unknown.
Dims unknown_shape_dims(const Dims& in, size_t len) {
  const size_t rank = std::max(in.size(), len);
  Dims out(rank, kDynamicDim);
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] > 1) out[rank - in.size() + i] = in[i];
  return out;
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  if (!ctx.has_input(1)) return ctx.error("missing input 'shape'");
  if (ctx.input_dtype(1) != DataType::kInt64)
    return ctx.error(std::string("shape must be int64, got ") + dtype_name(ctx.input_dtype(1)));
  const TensorInfo& s = ctx.input(1);
  if (s.has_shape && s.dims.size() != 1) return ctx.error("shape must be 1-D, got shape " + dims_to_string(s.dims));
  const DataType t = ctx.input_dtype(0);
  if (!ctx.input(0).has_shape) {
    ctx.set_output_unranked(0, t);
    return ok_status();
  }
  const Tensor* v = ctx.input_value(1);
  if (!v) {
    if (s.has_shape && s.dims[0] >= 0)
      ctx.set_output(0, t, unknown_shape_dims(ctx.input_dims(0), static_cast<size_t>(s.dims[0])));
    else
      ctx.set_output_unranked(0, t);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(auto shape, v->to_int64_vector());
  SRT_RETURN_IF_ERROR(check_shape_values(ctx.node(), shape));
  auto dims = broadcast_dims(ctx.input_dims(0), shape);
  if (!dims.ok()) return ctx.error(dims.status().message());
  ctx.set_output(0, t, *dims);
  return ok_status();
}

template <size_t kSize>
void copy_broadcast(const TensorRef& x, const TensorRef& y) {
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  for_each_broadcast<1>(y.dims, {x.dims}, [&](int64_t i, const std::array<int64_t, 1>& o) {
    std::memcpy(dst + i * kSize, src + o[0] * kSize, kSize);
  });
}

Status cpu(KernelContext& ctx) {
  if (!ctx.has_input(1)) return ctx.error("missing input 'shape'");
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  auto shape = read_int_values(ctx.input(1));
  SRT_RETURN_IF_ERROR(check_shape_values(ctx.node(), shape));
  auto want = broadcast_dims(x.dims, shape);
  if (!want.ok()) return ctx.error(want.status().message());
  if (*want != y.dims || y.dtype != x.dtype)
    return ctx.error("output " + dims_to_string(y.dims) + " differs from the expanded shape " + dims_to_string(*want));
  switch (dtype_size(x.dtype)) {
    case 1: copy_broadcast<1>(x, y); break;
    case 2: copy_broadcast<2>(x, y); break;
    case 4: copy_broadcast<4>(x, y); break;
    case 8: copy_broadcast<8>(x, y); break;
    default: return ctx.unsupported(std::string("data type ") + dtype_name(x.dtype));
  }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Expand, {.op_type = "Expand", .min_opset = 8, .infer = infer, .cpu = cpu, .shape_inputs = {1},
                              .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
