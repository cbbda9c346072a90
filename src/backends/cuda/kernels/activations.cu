// Parameterized float activations on CUDA: LeakyRelu, Elu, Selu, HardSigmoid, HardSwish,
// Gelu (approximate none / tanh). Mirrors src/ops/activations.cc: attributes read from the
// node with the same defaults, float16 / bfloat16 computed in float.
#include <cmath>
#include <numbers>

#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

struct LeakyReluOp {
  float alpha;
  __device__ float operator()(float x) const { return x >= 0 ? x : alpha * x; }
};
struct EluOp {
  float alpha;
  __device__ float operator()(float x) const { return x >= 0 ? x : alpha * expm1f(x); }
};
struct SeluOp {
  float alpha, gamma;
  __device__ float operator()(float x) const { return gamma * (x > 0 ? x : alpha * expm1f(x)); }
};

// Written with comparisons (not fminf/fmaxf) so NaN propagates, as on the CPU.
__device__ __forceinline__ float hard_sigmoid(float x, float alpha, float beta) {
  float v = alpha * x + beta;
  return v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
}
struct HardSigmoidOp {
  float alpha, beta;
  __device__ float operator()(float x) const { return hard_sigmoid(x, alpha, beta); }
};
struct HardSwishOp {
  __device__ float operator()(float x) const { return x * hard_sigmoid(x, 1.f / 6.f, 0.5f); }
};
struct GeluTanhOp {
  float k;  // sqrt(2 / pi)
  __device__ float operator()(float x) const { return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x))); }
};
struct GeluErfOp {
  float inv_sqrt2;
  __device__ float operator()(float x) const { return 0.5f * x * (1.f + erff(x * inv_sqrt2)); }
};

Status check_io(const CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input X and output Y");
  return ok_status();
}

Status leaky_relu_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 0.01f));
  return map_unary<ops::kFloats>(ctx, "LeakyRelu kernel", LeakyReluOp{alpha});
}

Status elu_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 1.f));
  return map_unary<ops::kFloats>(ctx, "Elu kernel", EluOp{alpha});
}

// The ONNX defaults, given to float precision in the spec (as in activations.cc).
constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;

Status selu_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", kSeluAlpha));
  SRT_ASSIGN_OR_RETURN(float gamma, ctx.node().attr_float("gamma", kSeluGamma));
  return map_unary<ops::kFloats>(ctx, "Selu kernel", SeluOp{alpha, gamma});
}

Status hard_sigmoid_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  SRT_ASSIGN_OR_RETURN(float alpha, ctx.node().attr_float("alpha", 0.2f));
  SRT_ASSIGN_OR_RETURN(float beta, ctx.node().attr_float("beta", 0.5f));
  return map_unary<ops::kFloats>(ctx, "HardSigmoid kernel", HardSigmoidOp{alpha, beta});
}

Status hard_swish_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  return map_unary<ops::kFloats>(ctx, "HardSwish kernel", HardSwishOp{});
}

Status gelu_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_io(ctx));
  SRT_ASSIGN_OR_RETURN(std::string approx, ctx.node().attr_string("approximate", std::string("none")));
  if (approx == "tanh")
    return map_unary<ops::kFloats>(ctx, "Gelu kernel",
                                   GeluTanhOp{static_cast<float>(std::sqrt(2.0 / std::numbers::pi))});
  if (approx == "none")
    return map_unary<ops::kFloats>(ctx, "Gelu kernel", GeluErfOp{static_cast<float>(1.0 / std::numbers::sqrt2)});
  return ctx.node().error(StatusCode::kInvalidModel,
                          "attribute 'approximate' is '" + approx + "', expected 'none' or 'tanh'");
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(LeakyRelu, "LeakyRelu", leaky_relu_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(Elu, "Elu", elu_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(Selu, "Selu", selu_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(HardSigmoid, "HardSigmoid", hard_sigmoid_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(HardSwish, "HardSwish", hard_swish_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(Gelu, "Gelu", gelu_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
