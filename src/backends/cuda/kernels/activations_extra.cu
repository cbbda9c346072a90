// Celu, ThresholdedRelu (float types) and Shrink (every numeric type) on CUDA. Mirrors
// src/ops/activations_extra.cc: same attribute defaults; Shrink on integers computes in double
// and saturates at the type's limits.
#include <limits>

#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

struct CeluOp {
  float alpha;
  __device__ float operator()(float x) const { return x > 0.f ? x : alpha * expm1f(x / alpha); }
};
struct ThresholdedReluOp {
  float alpha;
  __device__ float operator()(float x) const { return x > alpha ? x : 0.f; }
};

template <typename I>
__device__ __forceinline__ I saturate_to(double d) {
  if (isnan(d)) return 0;
  d = trunc(d);
  if (d <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (d >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

struct ShrinkOp {
  float lambd, bias;
  template <typename C>
  __device__ C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return x < -lambd ? x + bias : (x > lambd ? x - bias : C(0));
    } else {
      const double v = static_cast<double>(x);
      return saturate_to<C>(v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0));
    }
  }
};

Status check_io(const CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input X and output Y");
  return ok_status();
}

Status celu_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 1.f));
  if (alpha == 0.f) return ctx.node().error(StatusCode::kInvalidModel, "attribute 'alpha' must not be 0");
  return map_unary<ops::kFloats>(ctx, "Celu kernel", CeluOp{alpha});
}

Status thresholded_relu_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 1.f));
  return map_unary<ops::kFloats>(ctx, "ThresholdedRelu kernel", ThresholdedReluOp{alpha});
}

Status shrink_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  SRT_ASSIGN_OR_RETURN(float lambd, ctx.node().attr_float("lambd", 0.5f));
  SRT_ASSIGN_OR_RETURN(float bias, ctx.node().attr_float("bias", 0.f));
  return map_unary<ops::kNumeric>(ctx, "Shrink kernel", ShrinkOp{lambd, bias});
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Celu, "Celu", celu_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(ThresholdedRelu, "ThresholdedRelu", thresholded_relu_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(Shrink, "Shrink", shrink_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
