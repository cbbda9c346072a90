// SoftmaxCrossEntropyLoss (opsets 12, 13) on CUDA, mirroring src/ops/softmax_cross_entropy_loss.cc:
// a first kernel writes log_softmax over the class axis of the [N, C, D] scores in float to the
// workspace (and to the optional log_prob output), then the NegativeLogLikelihoodLoss kernels of
// nll_loss.cuh reduce it. A thread per (n, d) column walks C with stride D, so adjacent threads
// read adjacent elements when D > 1.
#include <cmath>

#include "backends/cuda/kernels/nll_loss.cuh"

namespace streamrt::cuda {
namespace {

template <typename T>
__global__ void log_softmax_axis1(const T* x, float* lp, T* lp_out, int64_t n, int64_t c, int64_t d) {
  const int64_t cols = n * d;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < cols; k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = k / d, j = k - i * d;
    const int64_t base = i * c * d + j;
    float mx = -INFINITY;
    for (int64_t q = 0; q < c; ++q) mx = fmaxf(mx, to_acc(x[base + q * d]));
    float sum = 0.f;
    for (int64_t q = 0; q < c; ++q) sum += expf(to_acc(x[base + q * d]) - mx);
    const float log_sum = logf(sum);
    for (int64_t q = 0; q < c; ++q) {
      const float v = (to_acc(x[base + q * d]) - mx) - log_sum;  // as on the CPU
      lp[base + q * d] = v;
      if (lp_out) lp_out[base + q * d] = from_acc<T>(v);
    }
  }
}

Status sce_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ops::LossAttrs attrs, ops::read_loss_attrs(ctx.node()));
  SRT_ASSIGN_OR_RETURN(ops::LossShape s, ops::check_loss_kernel(ctx, attrs));
  const ops::TensorRef& x = ctx.input(0);
  const bool want_lp = ctx.has_output(1);
  if (want_lp && (ctx.output(1).dims != x.dims || ctx.output(1).dtype != x.dtype))
    return ctx.error("log_prob output shape " + dims_to_string(ctx.output(1).dims) + " differs from the scores' " +
                     dims_to_string(x.dims));
  const int64_t numel = x.numel();
  SRT_RETURN_IF_ERROR(ctx.resources().ensure_workspace(static_cast<size_t>(std::max<int64_t>(numel, 1)) * sizeof(float)));
  auto* lp = static_cast<float*>(ctx.resources().workspace);
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    if (s.rows() > 0) {
      log_softmax_axis1<T><<<grid_for(s.rows()), 256, 0, ctx.stream()>>>(
          x.as<T>(), lp, want_lp ? ctx.output(1).as<T>() : nullptr, s.n, s.c, s.d);
      SRT_CUDA_LAUNCH("log_softmax_axis1");
    }
    const T* w = ctx.has_input(2) ? ctx.input(2).as<T>() : nullptr;
    return nll::launch<float, T>(ctx, attrs, s, lp, w, ctx.output(0).as<T>());
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(SoftmaxCrossEntropyLoss, "SoftmaxCrossEntropyLoss", sce_cuda,
                              cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
