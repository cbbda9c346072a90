// ArgMax / ArgMin on CUDA: a thread per output element (an (outer, inner) column) walks the
// axis with stride inner, so adjacent threads read adjacent elements. Parameters and the
// comparison are the CPU's (ops/arg_reduce.h).
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/arg_reduce.h"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

template <typename T>
__global__ void arg_reduce_kernel(const T* __restrict__ x, int64_t* __restrict__ y, int64_t outer, int64_t dim,
                                  int64_t inner, bool is_max, bool select_last) {
  const int64_t n = outer * inner;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < n; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, j = c - o * inner;
    const T* row = x + o * dim * inner + j;
    int64_t best = 0;
    acc_t<T> bv = to_acc(row[0]);
    for (int64_t k = 1; k < dim; ++k) {
      const acc_t<T> v = to_acc(row[k * inner]);
      if (ops::arg_better(v, bv, is_max, select_last)) {
        bv = v;
        best = k;
      }
    }
    y[c] = best;
  }
}

Status arg_reduce_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(ops::ArgReduceParams p, ops::arg_reduce_params(ctx.node(), x.dims));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, DataType::kInt64, p.out_dims));
  const int64_t n = p.outer * p.inner;
  if (n == 0) return ok_status();
  if (p.dim == 0) return ctx.error("cannot take the index of an extreme along an empty axis");
  return cuda_dispatch<ops::kNumeric>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    arg_reduce_kernel<T><<<grid_for(n), 256, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<int64_t>(), p.outer,
                                                                p.dim, p.inner, p.is_max, p.select_last);
    SRT_CUDA_LAUNCH("arg_reduce_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(ArgMax, "ArgMax", arg_reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ArgMin, "ArgMin", arg_reduce_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
