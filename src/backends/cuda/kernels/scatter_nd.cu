// ScatterND on CUDA, mirroring src/ops/scatter_nd.cc: the output starts as a copy of data, then
// one thread per update element finds its slice's row of indices and writes (or, with a
// reduction, atomically combines) the element there. The indices stay on the device, so a row
// with an out-of-range index is skipped (the CPU kernel fails the step instead). Without a
// reduction, which of repeated rows wins is undefined, as in ONNX.
#include "backends/cuda/kernels/indexing.cuh"

namespace streamrt::cuda {
namespace {

Status scatter_nd_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 3));
  const ops::TensorRef& data = ctx.input(0);
  const ops::TensorRef& indices = ctx.input(1);
  const ops::TensorRef& updates = ctx.input(2);
  const ops::TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(ops::ScatterReduction r, ops::scatter_reduction(ctx.node()));
  SRT_ASSIGN_OR_RETURN(NdSpace s, nd_space(ctx, data.dims, indices.dims, 0));
  const Dims expect = ops::nd_result_dims(data.dims, indices.dims, s.k, 0);
  if (updates.dims != expect)
    return ctx.error("updates " + dims_to_string(updates.dims) + " must have shape " + dims_to_string(expect));
  SRT_RETURN_IF_ERROR(copy_data_to_output(ctx, data, y));
  if (s.slice == 0) return ok_status();
  return by_index_type(ctx, indices.dtype, [&]<typename I>() {
    return launch_scatter(ctx, r, y, updates, NdAddr<I>{s, indices.as<const I>()});
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(ScatterND, "ScatterND", scatter_nd_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
