// DepthToSpace (DCR / CRD) and SpaceToDepth on CUDA: the 6-D view + permutation that
// src/ops/depth_to_space.cc computes (ops::depth_space_view), done as one device strided copy.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/depth_to_space.h"

namespace streamrt::cuda {
namespace {

Status depth_space_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ops::StridedView v, ops::depth_space_view(ctx));
  const ops::TensorRef& x = ctx.input(0);
  return strided_copy_cuda(ctx.output(0).data, x.data, dtype_size(x.dtype), v.dims, v.strides, 0, ctx.stream(),
                           ctx.node().describe());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(DepthToSpace, "DepthToSpace", depth_space_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(SpaceToDepth, "SpaceToDepth", depth_space_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
