// Mod on CUDA: numpy broadcasting through launch_elementwise, the scalar rule from ops/mod.h
// (the same code the CPU kernel runs).
#include "backends/cuda/kernels/elementwise.cuh"
#include "ops/data_movement.h"
#include "ops/mod.h"

namespace streamrt::cuda {
namespace {

template <typename T>
struct ModFn {
  bool c_fmod;
  __device__ __forceinline__ T operator()(T a, T b) const {
    return from_acc<T>(ops::mod_value<acc_t<T>>(to_acc(a), to_acc(b), c_fmod));
  }
};

Status mod_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  SRT_ASSIGN_OR_RETURN(int64_t f, ctx.node().attr_int("fmod", 0));
  if (f != 0 && f != 1) return ctx.node().error(StatusCode::kInvalidModel, "attribute 'fmod' must be 0 or 1");
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  if (a.dtype != b.dtype || y.dtype != a.dtype) return ctx.error("inputs and output must have one data type");
  return cuda_dispatch<ops::kNumeric>(a.dtype, ctx.node().describe(), [&]<typename T>() {
    return launch_elementwise(ctx, "Mod kernel", y.as<T>(), y.dims, ModFn<T>{f == 1}, operand<T>(a), operand<T>(b));
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Mod, "Mod", mod_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
