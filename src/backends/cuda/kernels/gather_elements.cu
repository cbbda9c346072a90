// GatherElements on CUDA, mirroring src/ops/gather_elements.cc: output[i] = data[i with i[axis]
// = indices[i]]. One thread per output element, moved by element size; the indices stay on the
// device, so an out-of-range one gives a zero element (the CPU kernel fails the step instead).
#include "backends/cuda/kernels/indexing.cuh"

namespace streamrt::cuda {
namespace {

Status gather_elements_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  const ops::TensorRef& data = ctx.input(0);
  const ops::TensorRef& indices = ctx.input(1);
  SRT_ASSIGN_OR_RETURN(int64_t a, ops::element_axis(ctx.node(), data.dims.size()));
  SRT_ASSIGN_OR_RETURN(ElementSpace s, element_space(ctx, data.dims, indices.dims, a));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, data.dtype, indices.dims));
  return by_index_type(ctx, indices.dtype, [&]<typename I>() {
    return launch_gather(ctx, ctx.output(0), data, ElementAddr<I>{s, indices.as<const I>()});
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(GatherElements, "GatherElements", gather_elements_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
