// ScatterND (opsets 11, 13, 16: reduction add / mul, 18: max / min): the output is data with
// each row of indices' last axis (length k, int64; int32 accepted too) addressing the slice
// output[i0, .., ik-1, :], which takes the matching slice of updates (or reduce(slice, update)
// in the order of the rows). updates dims: indices.dims[:-1] + data.dims[k:]. Negative indices
// count from the end; an out-of-range one is an error.
#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/indexing.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(check_scatter_inputs(ctx));
  const TensorInfo& data = ctx.input(0);
  const TensorInfo& idx = ctx.input(1);
  const TensorInfo& upd = ctx.input(2);
  if (data.has_shape && idx.has_shape) {
    SRT_ASSIGN_OR_RETURN(int64_t k, check_nd_dims(ctx.node(), StatusCode::kInvalidModel, data.dims, idx.dims, 0));
    if (k >= 0 && upd.has_shape && !dims_may_match(upd.dims, nd_result_dims(data.dims, idx.dims, k, 0)))
      return ctx.error("updates " + dims_to_string(upd.dims) + " must have shape " +
                       dims_to_string(nd_result_dims(data.dims, idx.dims, k, 0)));
  }
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 3));
  const TensorRef& data = ctx.input(0);
  const TensorRef& updates = ctx.input(2);
  const TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(ScatterReduction r, scatter_reduction(ctx.node()));
  SRT_ASSIGN_OR_RETURN(NdSlices s, nd_slice_offsets(ctx, data.dims, ctx.input(1), 0));
  const Dims expect = nd_result_dims(data.dims, ctx.input(1).dims, ctx.input(1).dims.back(), 0);
  if (updates.dims != expect)
    return ctx.error("updates " + dims_to_string(updates.dims) + " must have shape " + dims_to_string(expect));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, data.dtype, data.dims));
  if (y.data != data.data && data.nbytes() > 0) std::memcpy(y.data, data.data, data.nbytes());
  return scatter_into(ctx, r, y, updates, s.offsets, s.slice);
}

}  // namespace

STREAMRT_REGISTER_OP(ScatterND, {.op_type = "ScatterND", .min_opset = 11, .infer = infer, .cpu = cpu,
                                 .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
