// The NegativeLogLikelihoodLoss core on CUDA, shared by nll_loss.cu and
// softmax_cross_entropy_loss.cu (which runs it on its log-softmax). Semantics as the CPU core,
// ops::nll_loss_cpu (src/ops/nll_loss.cc), except that a target outside [0, C) that is not
// ignore_index cannot raise an error from the device: its loss is NaN (never read out of range),
// so the reduced loss is NaN too.
#pragma once

#include "backends/cuda/kernels/norm_util.cuh"
#include "ops/nll_loss.h"

namespace streamrt::cuda::nll {

constexpr int kReduceBlock = 512;

struct Params {
  int64_t n, c, d;
  bool has_ignore;
  int64_t ignore;
};

// Loss and applied weight of row r = n * D + d (both 0 for an ignored target).
template <typename TX, typename TT, typename TW>
__device__ __forceinline__ void row_loss(const Params& p, const TX* x, const TT* t, const TW* w, int64_t r,
                                         float& loss, float& wt) {
  const int64_t cls = static_cast<int64_t>(t[r]);
  if (p.has_ignore && cls == p.ignore) {
    loss = 0.f;
    wt = 0.f;
    return;
  }
  if (cls < 0 || cls >= p.c) {
    loss = NAN;
    wt = NAN;
    return;
  }
  const int64_t n = r / p.d, d = r - n * p.d;
  wt = w ? static_cast<float>(to_acc(w[cls])) : 1.f;
  loss = -static_cast<float>(to_acc(x[(n * p.c + cls) * p.d + d])) * wt;
}

template <typename TX, typename TT, typename TY>
__global__ void nll_none(Params p, const TX* x, const TT* t, const TY* w, TY* y) {
  const int64_t rows = p.n * p.d;
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    float loss, wt;
    row_loss(p, x, t, w, r, loss, wt);
    y[r] = from_acc<TY>(loss);
  }
}

// One block sums every row in a fixed order per thread and a fixed tree: deterministic. Losses
// are small tensors (one value per sample), so one block is not the bottleneck.
template <typename TX, typename TT, typename TY>
__global__ void nll_reduce(Params p, const TX* x, const TT* t, const TY* w, TY* y, bool mean) {
  __shared__ double scratch[32];
  const int64_t rows = p.n * p.d;
  double sum = 0, wsum = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    float loss, wt;
    row_loss(p, x, t, w, r, loss, wt);
    sum += loss;
    wsum += wt;
  }
  sum = norm::block_all_reduce(sum, norm::SumOp{}, scratch);
  wsum = norm::block_all_reduce(wsum, norm::SumOp{}, scratch);
  if (threadIdx.x == 0) y[0] = from_acc<TY>(static_cast<float>(mean ? sum / wsum : sum));
}

// Launches the loss of log-probabilities `x` ([N, C, D], device) into `y` (dtype TY, the shape
// the reduction implies) with the target of input 1 and weight `w` (C values or nullptr).
template <typename TX, typename TY>
Status launch(CudaKernelContext& ctx, const ops::LossAttrs& a, const ops::LossShape& s, const TX* x,
              const TY* w, TY* y) {
  const Params p{s.n, s.c, s.d, a.ignore_index.has_value(), a.ignore_index.value_or(0)};
  const int64_t rows = s.rows();
  const bool none = a.reduction == ops::LossReduction::kNone;
  if (none && rows == 0) return ok_status();
  auto go = [&]<typename TT>() {
    const TT* t = ctx.input(1).as<TT>();
    if (none) nll_none<TX, TT, TY><<<grid_for(rows), 256, 0, ctx.stream()>>>(p, x, t, w, y);
    else nll_reduce<TX, TT, TY><<<1, kReduceBlock, 0, ctx.stream()>>>(p, x, t, w, y, a.reduction == ops::LossReduction::kMean);
    SRT_CUDA_LAUNCH("nll_loss");
    return ok_status();
  };
  if (ctx.input(1).dtype == DataType::kInt64) return go.template operator()<int64_t>();
  return go.template operator()<int32_t>();
}

}  // namespace streamrt::cuda::nll
