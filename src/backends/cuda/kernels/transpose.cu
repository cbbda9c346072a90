// Transpose on CUDA: a strided copy of the input (ops::transpose_view, shared with
// src/ops/transpose.cc), which merges dims that stay contiguous and takes a tiled shared-memory
// path when the last two (merged) dims are swapped.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/transpose.h"

namespace streamrt::cuda {
namespace {

Status transpose_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ops::StridedView v, ops::transpose_view(ctx));
  const ops::TensorRef& x = ctx.input(0);
  return strided_copy_cuda(ctx.output(0).data, x.data, dtype_size(x.dtype), v.dims, v.strides, 0, ctx.stream(),
                           ctx.node().describe());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Transpose, "Transpose", transpose_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
