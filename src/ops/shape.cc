// Shape (with the opset-15 start/end slice) and Size: int64 facts about the input's dims.
// Both publish their output value at inference time when the dims they read are static, so
// Reshape / Slice targets computed from them are known when the plan is built; Shape publishes
// the static ones among dynamic dims as known elements (PartialInts).
#include "ops/shape.h"

#include <algorithm>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/partial_ints.h"

namespace streamrt::ops {
namespace {

Status shape_infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  const TensorInfo& x = ctx.input(0);
  if (!x.has_shape) {
    // Rank unknown: the length of the result is unknown too (start/end need the rank).
    SRT_RETURN_IF_ERROR(ctx.node().attr_int("start", 0).status());
    ctx.set_output(0, DataType::kInt64, {kDynamicDim});
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(auto range, shape_range(ctx.node(), static_cast<int64_t>(x.dims.size())));
  const auto [start, end] = range;
  ctx.set_output(0, DataType::kInt64, {end - start});
  Dims slice(x.dims.begin() + start, x.dims.begin() + end);
  if (dims_static(slice)) ctx.set_output_value(0, tensor_of(DataType::kInt64, {end - start}, slice));
  else ctx.set_output_partial(0, partial_of_dims(slice));  // the static dims are still known
  return ok_status();
}

Status shape_cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const Dims& dims = ctx.input(0).dims;
  SRT_ASSIGN_OR_RETURN(auto range, shape_range(ctx.node(), static_cast<int64_t>(dims.size())));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, DataType::kInt64, {range.second - range.first}));
  const TensorRef& y = ctx.output(0);
  for (int64_t i = range.first; i < range.second; ++i) y.as<int64_t>()[i - range.first] = dims[i];
  return ok_status();
}

Status size_infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  ctx.set_output(0, DataType::kInt64, {});
  const TensorInfo& x = ctx.input(0);
  if (x.has_shape) {
    int64_t n = dims_product_or_dynamic(x.dims, 0, x.dims.size());
    if (n >= 0) ctx.set_output_value(0, tensor_of(DataType::kInt64, {}, std::vector<int64_t>{n}));
  }
  return ok_status();
}

Status size_cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, DataType::kInt64, {}));
  *ctx.output(0).as<int64_t>() = ctx.input(0).numel();
  return ok_status();
}

}  // namespace

Result<std::pair<int64_t, int64_t>> shape_range(const ir::Node& node, int64_t rank) {
  SRT_ASSIGN_OR_RETURN(int64_t start, node.attr_int("start", 0));
  SRT_ASSIGN_OR_RETURN(int64_t end, node.attr_int("end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return std::make_pair(start, std::max(start, end));
}

STREAMRT_REGISTER_OP(Shape, {.op_type = "Shape", .infer = shape_infer, .cpu = shape_cpu,
                             .cpu_dtypes = kAnyDType, .dims_only_inputs = {0}});
STREAMRT_REGISTER_OP(Size, {.op_type = "Size", .infer = size_infer, .cpu = size_cpu, .cpu_dtypes = kAnyDType,
                            .dims_only_inputs = {0}});

}  // namespace streamrt::ops
