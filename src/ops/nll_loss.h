// Shared rules of the loss ops NegativeLogLikelihoodLoss (nll_loss.cc) and
// SoftmaxCrossEntropyLoss (softmax_cross_entropy_loss.cc), and of their CUDA kernels: the
// attributes, the [N, C, D] view of the inputs, the shape rule and the CPU loss core.
//
// The input (log-probabilities) is [N, C] or [N, C, d1..dk], viewed as [N, C, D] with
// D = d1 * .. * dk; the target is [N] or [N, d1..dk] (int32 / int64 class indices), the optional
// weight is [C]. loss(n, d) = -input[n, t, d] * weight[t] with t = target(n, d), or 0 where t is
// ignore_index. Reduction none: output [N, d1..dk]; sum: the scalar sum; mean: the sum divided
// by the sum of the applied weights (the count of non-ignored targets without weight).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

enum class LossReduction : int { kNone, kSum, kMean };

struct LossAttrs {
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index;
};

// The [N, C, D] view of the input.
struct LossShape {
  int64_t n = 0, c = 0, d = 1;
  int64_t rows() const { return n * d; }  // target elements
};

// reduction ("none" / "sum" / "mean", default mean) and ignore_index; kInvalidModel naming
// the node for another reduction.
Result<LossAttrs> read_loss_attrs(const ir::Node& node);

// Shape rule of both ops: input 0 the scores / log-probabilities (float types), input 1 the
// target, optional input 2 the weight; sets output 0 (dtype of input 0).
Status infer_loss(InferContext& ctx, const LossAttrs& attrs);

// Kernel-side: the inputs agree (target dims = input dims without C, weight [C]) and output 0
// has the dtype and dims the reduction implies. Returns the [N, C, D] view.
Result<LossShape> check_loss_kernel(const KernelContext& ctx, const LossAttrs& attrs);

// The loss on the CPU: `logp` the [N, C, D] log-probabilities, `target` N * D class indices,
// `weight` C values or nullptr. Writes N * D values (reduction none) or one to `out`. A target
// outside [0, C) that is not ignore_index is kInvalidArgument naming the node and the value.
Status nll_loss_cpu(const ir::Node& node, const LossAttrs& attrs, const LossShape& s, const float* logp,
                    const std::vector<int64_t>& target, const float* weight, std::vector<float>& out);

// nll_loss_cpu for a kernel: the target from input 1, the weight from optional input 2, the
// result stored to output 0 (its dtype, checked by check_loss_kernel).
Status nll_loss_to_output(KernelContext& ctx, const LossAttrs& attrs, const LossShape& s, const float* logp);

}  // namespace streamrt::ops
