// IsNaN and IsInf (detect_negative / detect_positive) on CUDA: float types in, bool out.
// Mirrors src/ops/is_nan_inf.cc.
#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

struct IsNaNOp {
  __device__ bool operator()(float v) const { return isnan(v); }
};
struct IsInfOp {
  bool negative, positive;
  __device__ bool operator()(float v) const { return isinf(v) && (v > 0 ? positive : negative); }
};

// Storage-type functor: T -> float -> predicate.
template <typename T, typename Op>
struct PredFn {
  Op op;
  __device__ __forceinline__ bool operator()(T x) const { return op(static_cast<float>(to_acc(x))); }
};

template <typename Op>
Status map_to_bool(CudaKernelContext& ctx, const char* name, const Op& op) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input X and output Y");
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.numel() != y.numel() || y.dtype != DataType::kBool)
    return ctx.error("input " + dims_to_string(x.dims) + " does not match the bool output " + dims_to_string(y.dims));
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    return launch_same_shape(ctx, name, y.as<bool>(), y.numel(), PredFn<T, Op>{op}, x.as<const T>());
  });
}

Status is_nan_cuda(CudaKernelContext& ctx) { return map_to_bool(ctx, "IsNaN kernel", IsNaNOp{}); }

Status is_inf_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(int64_t neg, ctx.node().attr_int("detect_negative", 1));
  SRT_ASSIGN_OR_RETURN(int64_t pos, ctx.node().attr_int("detect_positive", 1));
  return map_to_bool(ctx, "IsInf kernel", IsInfOp{neg != 0, pos != 0});
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(IsNaN, "IsNaN", is_nan_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(IsInf, "IsInf", is_inf_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
