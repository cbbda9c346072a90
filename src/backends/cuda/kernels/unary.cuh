// A same-shape unary op on CUDA given as a functor with its dtypes (`static constexpr unsigned
// kTypes`) and `__device__ operator()` on the compute type; shared by unary_math.cu and
// unary_math_extra.cu, whose SRT_CUDA_UNARY(Name) registers Name's kernel with its types.
#pragma once

#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {

template <typename Op>
Status unary_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input X and output Y");
  return map_unary<Op::kTypes>(ctx, "unary math kernel", Op{});
}

}  // namespace streamrt::cuda

#define SRT_CUDA_UNARY(Name) \
  STREAMRT_REGISTER_CUDA_KERNEL(Name, #Name, unary_cuda<Name>, cuda_dtypes(Name::kTypes))
