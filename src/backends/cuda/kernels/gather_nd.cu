// GatherND on CUDA, mirroring src/ops/gather_nd.cc: one thread per output element finds its
// slice's row of indices, adds up the data offset, and copies the element by size. The indices
// stay on the device, so a slice with an out-of-range index is written as zeros (the CPU kernel
// fails the step instead).
#include "backends/cuda/kernels/indexing.cuh"

namespace streamrt::cuda {
namespace {

Status gather_nd_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  const ops::TensorRef& data = ctx.input(0);
  const ops::TensorRef& indices = ctx.input(1);
  SRT_ASSIGN_OR_RETURN(int64_t b, ctx.node().attr_int("batch_dims", 0));
  SRT_ASSIGN_OR_RETURN(NdSpace s, nd_space(ctx, data.dims, indices.dims, b));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, data.dtype, ops::nd_result_dims(data.dims, indices.dims, s.k, b)));
  if (s.slice == 0) return ok_status();
  return by_index_type(ctx, indices.dtype, [&]<typename I>() {
    return launch_gather(ctx, ctx.output(0), data, NdAddr<I>{s, indices.as<const I>()});
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(GatherND, "GatherND", gather_nd_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
