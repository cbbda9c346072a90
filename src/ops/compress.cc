// Compress (opset 9, 11): the slices of `input` along `axis` whose `condition` (1-D bool) entry is
// true; without `axis`, the elements of the flattened input. A condition shorter than the axis
// drops the slices past its end (numpy.compress). Opset 11 allows a negative axis.
// The output size depends on condition's contents, so condition is a shape input (as NonZero's
// input): known at build time only for a constant condition, sized per run from its host contents
// otherwise (the CUDA engine runs this kernel on the host: it has no CUDA kernel).
#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {
namespace {

// The condition's true entries among the first `limit`; fails on a condition longer than that.
Result<std::vector<int64_t>> kept(const ir::Node& node, const uint8_t* cond, int64_t n, int64_t limit) {
  if (n > limit)
    return node.error(StatusCode::kInvalidArgument, "condition has " + std::to_string(n) +
                                                        " entries for an axis of " + std::to_string(limit));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i)
    if (cond[i]) out.push_back(i);
  return out;
}

Result<std::optional<int64_t>> axis_of(const ir::Node& node, int64_t rank) {
  if (!node.has_attr("axis")) return std::optional<int64_t>{};
  SRT_ASSIGN_OR_RETURN(int64_t a, node.attr_int("axis"));
  if (a < 0 && node.opset < 11) return node.error(StatusCode::kInvalidModel, "a negative axis needs opset 11");
  SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, a, rank));
  return std::optional<int64_t>{axis};
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  if (!ctx.has_input(1) || ctx.input_dtype(1) != DataType::kBool) return ctx.error("condition must be a bool tensor");
  const TensorInfo& x = ctx.input(0);
  const TensorInfo& c = ctx.input(1);
  if (c.has_shape && c.dims.size() != 1) return ctx.error("condition must be 1-D, got " + dims_to_string(c.dims));
  if (!x.has_shape) {
    ctx.set_output_unranked(0, x.dtype);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(std::optional<int64_t> axis, axis_of(ctx.node(), static_cast<int64_t>(x.dims.size())));
  int64_t count = kDynamicDim;
  if (const Tensor* v = ctx.input_value(1)) {
    const int64_t limit = axis ? x.dims[static_cast<size_t>(*axis)] : dims_static(x.dims) ? dims_numel(x.dims) : -1;
    if (limit >= 0) {
      SRT_ASSIGN_OR_RETURN(auto k, kept(ctx.node(), v->data_as<uint8_t>(), v->numel(), limit));
      count = static_cast<int64_t>(k.size());
    }
  }
  Dims out = axis ? x.dims : Dims{count};
  if (axis) out[static_cast<size_t>(*axis)] = count;
  ctx.set_output(0, x.dtype, out);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  const TensorRef& x = ctx.input(0);
  const TensorRef& c = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(std::optional<int64_t> axis, axis_of(ctx.node(), static_cast<int64_t>(x.dims.size())));
  // Without an axis the input is one axis of numel elements.
  const Dims dims = axis ? x.dims : Dims{x.numel()};
  const size_t a = axis ? static_cast<size_t>(*axis) : 0;
  SRT_ASSIGN_OR_RETURN(auto k, kept(ctx.node(), c.as<uint8_t>(), c.numel(), dims[a]));
  Dims want = dims;
  want[a] = static_cast<int64_t>(k.size());
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, axis ? want : Dims{want[0]}));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < a; ++d) outer *= dims[d];
  for (size_t d = a + 1; d < dims.size(); ++d) inner *= dims[d];
  const size_t es = dtype_size(x.dtype), row = static_cast<size_t>(inner) * es;
  if (row == 0 || k.empty()) return ok_status();  // nothing to copy (and the buffers may be null)
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : k) {
      std::memcpy(dst, src + (static_cast<size_t>(o * dims[a] + i)) * row, row);
      dst += row;
    }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Compress, {.op_type = "Compress", .min_opset = 9, .infer = infer, .cpu = cpu,
                                .shape_inputs = {1}, .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
