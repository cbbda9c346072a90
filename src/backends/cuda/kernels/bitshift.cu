// BitShift on CUDA (uint8 / 16 / 32 / 64, numpy broadcasting through launch_elementwise), the scalar rule
// from ops/bitshift.h as on the CPU.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "backends/cuda/kernels/elementwise.cuh"
#include "ops/bitshift.h"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

template <typename U>
struct BitShiftFn {
  bool left;
  __device__ __forceinline__ U operator()(U x, U s) const { return ops::bitshift_value(x, s, left); }
};

Status bitshift_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  SRT_ASSIGN_OR_RETURN(bool left, ops::bitshift_left(ctx.node()));
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  if (b.dtype != a.dtype || y.dtype != a.dtype) return ctx.error("X, Y and the output must share one type");
  return cuda_dispatch<ops::kUnsigned | kCudaWideTypes>(a.dtype, ctx.node().describe(), [&]<typename U>() {
    return launch_elementwise(ctx, "BitShift kernel", y.as<U>(), y.dims, BitShiftFn<U>{left}, operand<U>(a),
                              operand<U>(b));
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(BitShift, "BitShift", bitshift_cuda, cuda_dtypes(ops::kUnsigned | kCudaWideTypes));

}  // namespace streamrt::cuda
