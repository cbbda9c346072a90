// PRelu on CUDA: y = x < 0 ? slope * x : x, slope broadcast (unidirectionally) to X through
// launch_elementwise. Mirrors src/ops/prelu.cc: integer products wrap.
#include "backends/cuda/kernels/elementwise.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

template <typename T>
struct PReluFn {
  __device__ __forceinline__ T operator()(T x, T s) const {
    using C = acc_t<T>;
    const C xv = to_acc(x);
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      return xv < 0 ? static_cast<C>(static_cast<U>(to_acc(s)) * static_cast<U>(xv)) : xv;
    } else {
      return from_acc<T>(xv < 0 ? to_acc(s) * xv : xv);
    }
  }
};

Status prelu_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& s = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, x.dims));
  if (s.dtype != x.dtype) return ctx.error("slope must have X's data type");
  return cuda_dispatch<ops::kFloats | ops::kSignedInts>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    return launch_elementwise(ctx, "PRelu kernel", y.as<T>(), y.dims, PReluFn<T>{}, operand<T>(x), operand<T>(s));
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(PRelu, "PRelu", prelu_cuda, cuda_dtypes(ops::kFloats | ops::kSignedInts));

}  // namespace streamrt::cuda
