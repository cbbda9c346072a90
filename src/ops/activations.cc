// Parameterized float activations: LeakyRelu, Elu, Selu, HardSigmoid, HardSwish, Gelu.
// Attributes are read (and validated) in infer so a bad model fails at build time; the kernel
// reads them again because it only gets the node.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

Status infer_float_unary(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// ---- LeakyRelu: x >= 0 ? x : alpha * x ------------------------------------------------
Status leaky_relu_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("alpha", 0.01f).status());
  return infer_float_unary(ctx);
}
Status leaky_relu_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 0.01f));
  return map_floats(ctx, [alpha](float x) { return x >= 0 ? x : alpha * x; });
}

// ---- Elu: x >= 0 ? x : alpha * (e^x - 1) ---------------------------------------------
Status elu_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("alpha", 1.f).status());
  return infer_float_unary(ctx);
}
Status elu_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 1.f));
  return map_floats(ctx, [alpha](float x) { return x >= 0 ? x : alpha * std::expm1(x); });
}

// ---- Selu: gamma * (x > 0 ? x : alpha * (e^x - 1)) -----------------------------------
// The ONNX defaults, given to float precision in the spec.
constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;

Status selu_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("alpha", kSeluAlpha).status());
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("gamma", kSeluGamma).status());
  return infer_float_unary(ctx);
}
Status selu_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", kSeluAlpha));
  SRT_ASSIGN_OR_RETURN(float gamma, ctx.node().attr_float("gamma", kSeluGamma));
  return map_floats(ctx, [alpha, gamma](float x) {
    return gamma * (x > 0 ? x : alpha * std::expm1(x));
  });
}

// ---- HardSigmoid: clamp(alpha * x + beta, 0, 1); HardSwish: x * HardSigmoid(x) with
// alpha = 1/6, beta = 1/2 (fixed, no attributes) ----------------------------------------
// Written with comparisons (not fmin/fmax) so NaN propagates.
float hard_sigmoid(float x, float alpha, float beta) {
  float v = alpha * x + beta;
  return v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
}

Status hard_sigmoid_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("alpha", 0.2f).status());
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("beta", 0.5f).status());
  return infer_float_unary(ctx);
}
Status hard_sigmoid_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 0.2f));
  SRT_ASSIGN_OR_RETURN(float beta, ctx.node().attr_float("beta", 0.5f));
  return map_floats(ctx, [alpha, beta](float x) { return hard_sigmoid(x, alpha, beta); });
}

Status hard_swish_cpu(KernelContext& ctx) {
  return map_floats(ctx, [](float x) { return x * hard_sigmoid(x, 1.f / 6.f, 0.5f); });
}

// ---- Gelu (opset 20): approximate = "none": x/2 * (1 + erf(x / sqrt 2));
// "tanh": x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) ------------------------------
Result<bool> gelu_uses_tanh(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(std::string approx, node.attr_string("approximate", std::string("none")));
  if (approx == "none") return false;
  if (approx == "tanh") return true;
  return node.error(StatusCode::kInvalidModel,
                    "attribute 'approximate' is '" + approx + "', expected 'none' or 'tanh'");
}

Status gelu_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(gelu_uses_tanh(ctx.node()).status());
  return infer_float_unary(ctx);
}
// erf as x P(x^2) / Q(x^2) on [-4, 4] (|erf| rounds to 1 beyond), coefficients fitted here by
// iteratively reweighted least squares: |error| <= 1.6e-7 in exact arithmetic, 3.5e-7 evaluated in
// float (libm's erff: ~6e-8). Branch-free, so the element loop vectorizes; libm's erff is a call
// per element and was 15 % of a BERT run on the CPU. Gelu only: the Erf op keeps libm's.
float gelu_erf(float x) {
  constexpr float p0 = 1.1283791432e+00f, p1 = 1.8712473089e-01f, p2 = 5.2347146042e-02f, p3 = 3.6365245200e-03f,
                  p4 = 2.8392628335e-04f, p5 = 2.0985616046e-06f;
  constexpr float q1 = 4.9916786732e-01f, q2 = 1.1278285663e-01f, q3 = 1.4705545504e-02f, q4 = 1.1351022576e-03f,
                  q5 = 3.8549679808e-05f;
  // The clamps vectorize only where compares may become selects: this file builds with
  // -fno-trapping-math (CMakeLists.txt); without it GCC keeps them as branches and the loop scalar.
  const float c = std::min(4.f, std::max(-4.f, x));
  const float t = c * c;
  const float num = c * (p0 + t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * p5)))));
  const float den = 1.f + t * (q1 + t * (q2 + t * (q3 + t * (q4 + t * q5))));
  return std::min(1.f, std::max(-1.f, num / den));
}

Status gelu_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(bool use_tanh, gelu_uses_tanh(ctx.node()));
  if (use_tanh) {
    const float k = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
    return map_floats(ctx, [k](float x) {
      return 0.5f * x * (1.f + std::tanh(k * (x + 0.044715f * x * x * x)));
    });
  }
  const float inv_sqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
  return map_floats(ctx, [inv_sqrt2](float x) { return 0.5f * x * (1.f + gelu_erf(x * inv_sqrt2)); });
}

}  // namespace

STREAMRT_REGISTER_OP(LeakyRelu, {.op_type = "LeakyRelu", .min_opset = 6, .infer = leaky_relu_infer,
                                 .cpu = leaky_relu_cpu, .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(Elu, {.op_type = "Elu", .min_opset = 6, .infer = elu_infer, .cpu = elu_cpu,
                           .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(Selu, {.op_type = "Selu", .min_opset = 6, .infer = selu_infer, .cpu = selu_cpu,
                            .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(HardSigmoid, {.op_type = "HardSigmoid", .min_opset = 6,
                                   .infer = hard_sigmoid_infer, .cpu = hard_sigmoid_cpu,
                                   .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(HardSwish, {.op_type = "HardSwish", .min_opset = 14, .infer = infer_float_unary,
                                 .cpu = hard_swish_cpu, .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(Gelu, {.op_type = "Gelu", .min_opset = 20, .infer = gelu_infer, .cpu = gelu_cpu,
                            .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
