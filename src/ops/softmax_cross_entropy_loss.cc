// SoftmaxCrossEntropyLoss (opsets 12, 13; 13 only adds bfloat16): the NegativeLogLikelihoodLoss
// (nll_loss.h) of log_softmax(scores) along the class axis 1 of [N, C, d1..dk] scores. The
// optional second output is that log-softmax (the scores' shape). Attributes reduction
// (default mean) and ignore_index as for NegativeLogLikelihoodLoss.
#include <algorithm>
#include <cmath>

#include "ops/common.h"
#include "ops/gemm_util.h"
#include "ops/nll_loss.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(LossAttrs attrs, read_loss_attrs(ctx.node()));
  SRT_RETURN_IF_ERROR(infer_loss(ctx, attrs));
  ctx.set_output_like(1, ctx.input_dtype(0), 0);
  return ok_status();
}

// log_softmax over C of the [N, C, D] scores `x`, into `lp` (same layout); the column maximum
// is subtracted first so that exp cannot overflow.
void log_softmax_axis1(const LossShape& s, const float* x, float* lp) {
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t d = 0; d < s.d; ++d) {
      const float* col = x + n * s.c * s.d + d;
      float* out = lp + n * s.c * s.d + d;
      float mx = -INFINITY;
      for (int64_t c = 0; c < s.c; ++c) mx = std::max(mx, col[c * s.d]);
      float sum = 0.f;
      for (int64_t c = 0; c < s.c; ++c) sum += std::exp(col[c * s.d] - mx);
      // (x - max) - log(sum), not x - (max + log(sum)): the small log term keeps its bits.
      const float log_sum = std::log(sum);
      for (int64_t c = 0; c < s.c; ++c) out[c * s.d] = (col[c * s.d] - mx) - log_sum;
    }
}

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(LossAttrs attrs, read_loss_attrs(ctx.node()));
  SRT_ASSIGN_OR_RETURN(LossShape s, check_loss_kernel(ctx, attrs));
  const TensorRef& x = ctx.input(0);
  if (ctx.has_output(1) && (ctx.output(1).dims != x.dims || ctx.output(1).dtype != x.dtype))
    return ctx.error("log_prob output shape " + dims_to_string(ctx.output(1).dims) + " differs from the scores' " +
                     dims_to_string(x.dims));
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    FloatView<T> scores(x.as<T>(), x.numel());
    std::vector<float> lp(static_cast<size_t>(x.numel()));
    log_softmax_axis1(s, scores.get(), lp.data());
    SRT_RETURN_IF_ERROR(nll_loss_to_output(ctx, attrs, s, lp.data()));
    if (ctx.has_output(1)) {
      T* py = ctx.output(1).as<T>();
      for (size_t i = 0; i < lp.size(); ++i) py[i] = store<T>(lp[i]);
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(SoftmaxCrossEntropyLoss, {.op_type = "SoftmaxCrossEntropyLoss", .min_opset = 12,
                                               .infer = infer, .cpu = cpu, .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
