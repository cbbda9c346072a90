// CumSum on CUDA: a thread per (outer, inner) line scans the axis sequentially (adjacent
// threads touch adjacent elements when inner > 1). The axis comes from the host copy of input
// 1 (a shape input); parameters are the CPU's (ops/cumsum.h). Floats accumulate in float,
// integers wrap, as on the CPU.
#include <type_traits>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/cumsum.h"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

template <typename C>
__device__ __forceinline__ C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(a) + static_cast<std::make_unsigned_t<C>>(b));
  else return a + b;
}

template <typename T>
__global__ void cumsum_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t dim, int64_t inner,
                              bool exclusive, bool reverse) {
  const int64_t n = outer * inner;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < n; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, j = c - o * inner;
    const int64_t base = o * dim * inner + j;
    acc_t<T> acc = acc_t<T>(0);
    for (int64_t s = 0; s < dim; ++s) {
      const int64_t at = base + (reverse ? dim - 1 - s : s) * inner;
      const acc_t<T> v = to_acc(x[at]);
      if (!exclusive) acc = wrap_add(acc, v);
      y[at] = from_acc<T>(acc);
      if (exclusive) acc = wrap_add(acc, v);
    }
  }
}

constexpr unsigned kTypes = ops::kFloats | ops::kFloat64 | ops::kSignedInts | ops::kUnsigned | kCudaWideTypes;

Status cumsum_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  const ops::TensorRef& x = ctx.input(0);
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, x.dims));
  const Tensor* axis_host = ctx.host_value(1);
  if (!axis_host) return ctx.error("axis (input 1) is not available on the host");
  std::vector<int64_t> values;
  if (axis_host->dtype() == DataType::kInt64 || axis_host->dtype() == DataType::kInt32) {
    SRT_ASSIGN_OR_RETURN(values, axis_host->to_int64_vector());
  }
  SRT_ASSIGN_OR_RETURN(int64_t axis, ops::cumsum_axis(ctx.node(), axis_host->dtype(), axis_host->dims(), values));
  SRT_ASSIGN_OR_RETURN(ops::CumSumParams p, ops::cumsum_params(ctx.node(), x.dims, axis));
  const int64_t n = p.outer * p.inner;
  if (n == 0 || p.dim == 0) return ok_status();
  return cuda_dispatch<kTypes>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    cumsum_kernel<T><<<grid_for(n), 256, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<T>(), p.outer, p.dim,
                                                            p.inner, p.exclusive, p.reverse);
    SRT_CUDA_LAUNCH("cumsum_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(CumSum, "CumSum", cumsum_cuda, cuda_dtypes(kTypes));

}  // namespace streamrt::cuda
