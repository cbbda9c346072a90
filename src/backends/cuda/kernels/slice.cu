// Slice on CUDA. starts/ends/axes/steps come from the host copies of inputs 1..4 (Slice
// declares them shape inputs) or, before opset 10, the attributes. The effective start and step
// of each axis are resolved on the host by ops::resolve_slice, the same code as the CPU kernel
// (spec clamping, negative steps), and the copy is one device strided copy of that view.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"
#include "ops/slice.h"

namespace streamrt::cuda {
namespace {

Status slice_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(auto starts, host_int_list(ctx, 1, "starts"));
  SRT_ASSIGN_OR_RETURN(auto ends, host_int_list(ctx, 2, "ends"));
  SRT_ASSIGN_OR_RETURN(auto axes, host_int_list(ctx, 3, "axes"));
  SRT_ASSIGN_OR_RETURN(auto steps, host_int_list(ctx, 4, "steps"));
  if (!starts || !ends) return ctx.error("missing starts or ends");
  SRT_ASSIGN_OR_RETURN(ops::SliceView v, ops::resolve_slice(ctx.node(), x.dims, std::move(*starts),
                                                          std::move(*ends), std::move(axes), std::move(steps)));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, v.out_dims));
  return strided_copy_cuda(y.data, x.data, dtype_size(x.dtype), v.out_dims, v.strides, v.offset, ctx.stream(),
                           ctx.node().describe());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Slice, "Slice", slice_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
