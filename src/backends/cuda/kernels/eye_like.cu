// EyeLike on CUDA, mirroring src/ops/eye_like.cc: one thread per output element writes the
// bits of 1 in the output type (computed on the host, ops/eye_like.h) where j - i == k, zero
// elsewhere; moved by element size, so every type works. The input's values are never read.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/data_movement.h"
#include "ops/eye_like.h"

namespace streamrt::cuda {
namespace {

template <typename U>
__global__ void eye_like_kernel(U* __restrict__ y, int64_t cols, int64_t k, U one, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / cols;
    y[e] = e - i * cols - i == k ? one : U(0);
  }
}

Status eye_like_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.dims.size() != 2) return ctx.error("input must be 2-D, got shape " + dims_to_string(x.dims));
  SRT_ASSIGN_OR_RETURN(DataType t, ops::eye_like_dtype(ctx.node(), x.dtype));
  SRT_ASSIGN_OR_RETURN(uint64_t one, ops::one_bits(ctx.node(), t));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, t, x.dims));
  SRT_ASSIGN_OR_RETURN(int64_t k, ops::eye_like_k(ctx.node(), x.dims[0], x.dims[1]));
  const int64_t n = y.numel();
  if (n == 0) return ok_status();
  return dispatch_by_size(t, ctx, [&]<typename U>() {
    eye_like_kernel<U><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<U>(), x.dims[1], k, static_cast<U>(one), n);
    SRT_CUDA_LAUNCH("eye_like_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(EyeLike, "EyeLike", eye_like_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
