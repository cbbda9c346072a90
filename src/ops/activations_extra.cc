// More parameterized activations: Celu (opset 12), Shrink (opset 9), ThresholdedRelu (opset
// 10). Celu and ThresholdedRelu take float types, Shrink every numeric type (integers compute
// in double, the result truncated toward zero and saturated at the type's limits, so a bias
// that pushes a value past them never makes an undefined conversion). The CUDA twin is
// backends/cuda/kernels/activations_extra.cu.
#include <cmath>
#include <limits>

#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

Status infer_unary(InferContext& ctx, unsigned types) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, types));
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// ---- Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) -----------------------------
Status celu_infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 1.f));
  if (alpha == 0.f) return ctx.error("attribute 'alpha' must not be 0 (Celu divides by it)");
  return infer_unary(ctx, kFloats);
}
Status celu_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 1.f));
  return map_floats(ctx, [alpha](float x) { return x > 0.f ? x : alpha * std::expm1(x / alpha); });
}

// ---- ThresholdedRelu: x > alpha ? x : 0 --------------------------------------------------
Status thresholded_relu_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("alpha", 1.f).status());
  return infer_unary(ctx, kFloats);
}
Status thresholded_relu_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 1.f));
  return map_floats(ctx, [alpha](float x) { return x > alpha ? x : 0.f; });
}

// ---- Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0) ---------------------------
template <typename I>
I saturate_to(double d) {
  if (std::isnan(d)) return 0;
  d = std::trunc(d);
  if (d <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (d >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

Status shrink_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("lambd", 0.5f).status());
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("bias", 0.f).status());
  return infer_unary(ctx, kNumeric);
}
Status shrink_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(float lambd, ctx.node().attr_float("lambd", 0.5f));
  SRT_ASSIGN_OR_RETURN(float bias, ctx.node().attr_float("bias", 0.f));
  SRT_RETURN_IF_ERROR(check_same_numel(ctx, 0, 0));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  return dispatch<kNumeric>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    using C = compute_t<T>;
    using F = std::conditional_t<std::is_floating_point_v<C>, C, double>;
    const T* px = x.as<T>();
    T* py = y.as<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      const F v = static_cast<F>(load(px[i]));
      const F r = v < -lambd ? v + bias : (v > lambd ? v - bias : F(0));
      if constexpr (std::is_floating_point_v<C>) py[i] = store<T>(r);
      else py[i] = saturate_to<T>(r);
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Celu, {.op_type = "Celu", .min_opset = 12, .infer = celu_infer, .cpu = celu_cpu,
                            .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(ThresholdedRelu, {.op_type = "ThresholdedRelu", .min_opset = 10,
                                       .infer = thresholded_relu_infer, .cpu = thresholded_relu_cpu,
                                       .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(Shrink, {.op_type = "Shrink", .min_opset = 9, .infer = shrink_infer, .cpu = shrink_cpu,
                              .cpu_dtypes = dtypes(kNumeric)});

}  // namespace streamrt::ops
