// ScatterElements and the deprecated Scatter on CUDA, mirroring src/ops/scatter_elements.cc:
// the output starts as a copy of data, then one thread per update element writes (or, with a
// reduction, atomically combines) it at its index. The indices stay on the device, so an
// out-of-range one is skipped (the CPU kernel fails the step instead). Without a reduction,
// which of repeated indices wins is undefined, as in ONNX.
#include "backends/cuda/kernels/indexing.cuh"

namespace streamrt::cuda {
namespace {

Status scatter_elements_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 3));
  const ops::TensorRef& data = ctx.input(0);
  const ops::TensorRef& indices = ctx.input(1);
  const ops::TensorRef& updates = ctx.input(2);
  const ops::TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(ops::ScatterReduction r, ops::scatter_reduction(ctx.node()));
  SRT_ASSIGN_OR_RETURN(int64_t a, ops::element_axis(ctx.node(), data.dims.size()));
  SRT_ASSIGN_OR_RETURN(ElementSpace s, element_space(ctx, data.dims, indices.dims, a));
  if (updates.dims != indices.dims)
    return ctx.error("updates " + dims_to_string(updates.dims) + " must have the shape of indices " +
                     dims_to_string(indices.dims));
  SRT_RETURN_IF_ERROR(copy_data_to_output(ctx, data, y));
  return by_index_type(ctx, indices.dtype, [&]<typename I>() {
    return launch_scatter(ctx, r, y, updates, ElementAddr<I>{s, indices.as<const I>()});
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(ScatterElements, "ScatterElements", scatter_elements_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(Scatter, "Scatter", scatter_elements_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
