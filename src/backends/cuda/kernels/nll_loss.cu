// NegativeLogLikelihoodLoss (opsets 12, 13, 22) on CUDA, mirroring src/ops/nll_loss.cc; the
// kernels are in nll_loss.cuh (shared with SoftmaxCrossEntropyLoss).
#include "backends/cuda/kernels/nll_loss.cuh"

namespace streamrt::cuda {
namespace {

Status nll_loss_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ops::LossAttrs attrs, ops::read_loss_attrs(ctx.node()));
  SRT_ASSIGN_OR_RETURN(ops::LossShape s, ops::check_loss_kernel(ctx, attrs));
  const ops::TensorRef& x = ctx.input(0);
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* w = ctx.has_input(2) ? ctx.input(2).as<T>() : nullptr;
    return nll::launch<T, T>(ctx, attrs, s, x.as<T>(), w, ctx.output(0).as<T>());
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(NegativeLogLikelihoodLoss, "NegativeLogLikelihoodLoss", nll_loss_cuda,
                              cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
