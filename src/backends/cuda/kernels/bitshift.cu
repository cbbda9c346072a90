// BitShift on CUDA (uint8, numpy broadcasting through launch_elementwise), the scalar rule
// from ops/bitshift.h as on the CPU.
#include "backends/cuda/kernels/elementwise.cuh"
#include "ops/bitshift.h"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

struct BitShiftFn {
  bool left;
  __device__ __forceinline__ uint8_t operator()(uint8_t x, uint8_t s) const { return ops::bitshift_value(x, s, left); }
};

Status bitshift_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  SRT_ASSIGN_OR_RETURN(bool left, ops::bitshift_left(ctx.node()));
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  if (a.dtype != DataType::kUInt8 || b.dtype != a.dtype || y.dtype != a.dtype)
    return ctx.unsupported("BitShift supports uint8 only");
  return launch_elementwise(ctx, "BitShift kernel", y.as<uint8_t>(), y.dims, BitShiftFn{left}, operand<uint8_t>(a),
                            operand<uint8_t>(b));
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(BitShift, "BitShift", bitshift_cuda);

}  // namespace streamrt::cuda
