// Hardmax on CUDA: a thread per row (an (outer, inner) column of the [outer, dim, inner] view
// from ops::softmax_geometry, the CPU's code) finds the first maximum (ops::arg_better) and
// writes the row's ones and zeros.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/arg_reduce.h"
#include "ops/data_movement.h"
#include "ops/softmax.h"

namespace streamrt::cuda {
namespace {

template <typename T>
__global__ void hardmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t dim, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < n; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, j = c - o * inner;
    const int64_t base = o * dim * inner + j;
    int64_t best = 0;
    acc_t<T> bv = to_acc(x[base]);
    for (int64_t k = 1; k < dim; ++k) {
      const acc_t<T> v = to_acc(x[base + k * inner]);
      if (ops::arg_better(v, bv, true, false)) {
        bv = v;
        best = k;
      }
    }
    for (int64_t k = 0; k < dim; ++k) y[base + k * inner] = from_acc<T>(k == best ? 1.f : 0.f);
  }
}

Status hardmax_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, x.dims));
  SRT_ASSIGN_OR_RETURN(ops::SoftmaxGeometry g, ops::softmax_geometry(ctx.node(), x.dims));
  if (x.numel() == 0) return ok_status();
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    hardmax_kernel<T><<<grid_for(g.outer * g.inner), 256, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<T>(),
                                                                              g.outer, g.dim, g.inner);
    SRT_CUDA_LAUNCH("hardmax_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Hardmax, "Hardmax", hardmax_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
