// ScatterElements (opsets 11, 13, 16: reduction add / mul, 18: max / min) and the deprecated
// Scatter (opsets 9, 11: ScatterElements without reduction; the same rule and kernel): the
// output is data with, for every multi-index i of `indices` (int32 / int64, data's rank, dims
// off the axis no larger than data's), output[i with i[axis] = indices[i]] = updates[i], or
// reduce(output[...], updates[i]) in the order of i. updates has indices' shape and data's
// type. Negative indices count from the end; an out-of-range one is an error.
#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/indexing.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(check_scatter_inputs(ctx));
  const TensorInfo& idx = ctx.input(1);
  const TensorInfo& upd = ctx.input(2);
  if (idx.has_shape && upd.has_shape && !dims_may_match(idx.dims, upd.dims))
    return ctx.error("updates " + dims_to_string(upd.dims) + " must have the shape of indices " +
                     dims_to_string(idx.dims));
  SRT_RETURN_IF_ERROR(infer_element_dims(ctx));
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// Plan load: axis within data's rank (the kernel strides over it).
Status verify(const InferContext& ctx) { return verify_axis_attr(ctx, "axis", 0); }

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 3));
  const TensorRef& data = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(ScatterReduction r, scatter_reduction(ctx.node()));
  SRT_ASSIGN_OR_RETURN(int64_t a, element_axis(ctx.node(), data.dims.size()));
  SRT_ASSIGN_OR_RETURN(auto offsets, element_offsets(ctx, data.dims, ctx.input(1), a));
  if (ctx.input(2).dims != ctx.input(1).dims)
    return ctx.error("updates " + dims_to_string(ctx.input(2).dims) + " must have the shape of indices " +
                     dims_to_string(ctx.input(1).dims));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, data.dtype, data.dims));
  if (y.data != data.data && data.nbytes() > 0) std::memcpy(y.data, data.data, data.nbytes());
  return scatter_into(ctx, r, y, ctx.input(2), offsets, 1);
}

}  // namespace

STREAMRT_REGISTER_OP(ScatterElements,
                     {.op_type = "ScatterElements", .min_opset = 11, .infer = infer, .cpu = cpu, .verify = verify,
                                                            .cpu_dtypes = kAnyDType});
STREAMRT_REGISTER_OP(Scatter, {.op_type = "Scatter", .min_opset = 9, .infer = infer, .cpu = cpu, .verify = verify,
                               .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
