// NegativeLogLikelihoodLoss (opsets 12, 13, 22; later versions only add data types):
// loss(n, d) = -input[n, target(n, d), d] * weight[target(n, d)], 0 where the target is
// ignore_index, then reduced (none / sum / mean over the applied weights). The shared rules and
// the CPU core, also used by SoftmaxCrossEntropyLoss, are described in nll_loss.h.
#include "ops/nll_loss.h"

#include <cmath>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/gemm_util.h"

namespace streamrt::ops {

Result<LossAttrs> read_loss_attrs(const ir::Node& node) {
  LossAttrs a;
  SRT_ASSIGN_OR_RETURN(std::string r, node.attr_string("reduction", "mean"));
  if (r == "none") a.reduction = LossReduction::kNone;
  else if (r == "sum") a.reduction = LossReduction::kSum;
  else if (r == "mean") a.reduction = LossReduction::kMean;
  else return node.error(StatusCode::kInvalidModel, "reduction '" + r + "' is not none, sum or mean");
  if (node.has_attr("ignore_index")) {
    SRT_ASSIGN_OR_RETURN(int64_t ii, node.attr_int("ignore_index"));
    a.ignore_index = ii;
  }
  return a;
}

namespace {

// The target's dims as implied by the input's (C removed), merged with the target's own.
Result<Dims> target_dims(const InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const TensorInfo& t = ctx.input(1);
  if (x.has_shape && x.dims.size() < 2)
    return ctx.error("input must have rank >= 2 ([N, C, ...]), got shape " + dims_to_string(x.dims));
  if (!x.has_shape) return t.dims;
  Dims want = x.dims;
  want.erase(want.begin() + 1);
  if (!t.has_shape) return want;
  if (t.dims.size() != want.size())
    return ctx.error("target shape " + dims_to_string(t.dims) + " does not match input shape " +
                     dims_to_string(x.dims) + " without its class axis");
  for (size_t i = 0; i < want.size(); ++i) {
    auto m = merge_dim(want[i], t.dims[i]);
    if (!m)
      return ctx.error("target shape " + dims_to_string(t.dims) + " does not match input shape " +
                       dims_to_string(x.dims) + " without its class axis");
    want[i] = *m;
  }
  return want;
}

}  // namespace

Status infer_loss(InferContext& ctx, const LossAttrs& attrs) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  const DataType t = ctx.input_dtype(0);
  if (!ctx.has_input(1) || (ctx.input_dtype(1) != DataType::kInt64 && ctx.input_dtype(1) != DataType::kInt32))
    return ctx.error("the target (input 1) must be int32 or int64");
  if (ctx.has_input(2)) {
    if (ctx.input_dtype(2) != t)
      return ctx.error(std::string("weight has type ") + dtype_name(ctx.input_dtype(2)) + ", input has " + dtype_name(t));
    const TensorInfo& w = ctx.input(2);
    const TensorInfo& x = ctx.input(0);
    if (w.has_shape && (w.dims.size() != 1 ||
                        (x.has_shape && x.dims.size() >= 2 && !merge_dim(w.dims[0], x.dims[1]))))
      return ctx.error("weight must be [C], got shape " + dims_to_string(w.dims));
  }
  if (attrs.reduction != LossReduction::kNone) {
    ctx.set_output(0, t, {});
    return ok_status();
  }
  if (!ctx.input(0).has_shape && !ctx.input(1).has_shape) {
    ctx.set_output_unranked(0, t);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(Dims dims, target_dims(ctx));
  ctx.set_output(0, t, std::move(dims));
  return ok_status();
}

Result<LossShape> check_loss_kernel(const KernelContext& ctx, const LossAttrs& attrs) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_output(0)) return ctx.error("needs input, target and output");
  const TensorRef& x = ctx.input(0);
  const TensorRef& t = ctx.input(1);
  if (x.dims.size() < 2) return ctx.error("input must have rank >= 2, got shape " + dims_to_string(x.dims));
  if (t.dtype != DataType::kInt64 && t.dtype != DataType::kInt32) return ctx.error("target must be int32 or int64");
  Dims want = x.dims;
  want.erase(want.begin() + 1);
  if (t.dims != want)
    return ctx.error("target shape " + dims_to_string(t.dims) + " does not match input shape " + dims_to_string(x.dims));
  LossShape s{x.dims[0], x.dims[1], dims_product(x.dims, 2, x.dims.size())};
  if (ctx.has_input(2) && (ctx.input(2).dims != Dims{s.c} || ctx.input(2).dtype != x.dtype))
    return ctx.error("weight shape " + dims_to_string(ctx.input(2).dims) + " is not [C] = [" + std::to_string(s.c) + "]");
  const Dims out = attrs.reduction == LossReduction::kNone ? want : Dims{};
  const TensorRef& y = ctx.output(0);
  if (y.dims != out || y.dtype != x.dtype)
    return ctx.error("output shape " + dims_to_string(y.dims) + " differs from " + dims_to_string(out));
  return s;
}

Status nll_loss_cpu(const ir::Node& node, const LossAttrs& attrs, const LossShape& s, const float* logp,
                    const std::vector<int64_t>& target, const float* weight, std::vector<float>& out) {
  const bool none = attrs.reduction == LossReduction::kNone;
  out.assign(none ? static_cast<size_t>(s.rows()) : 1, 0.f);
  double sum = 0, wsum = 0;  // double: a long sum of floats keeps its precision
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t d = 0; d < s.d; ++d) {
      const int64_t r = n * s.d + d;
      const int64_t t = target[static_cast<size_t>(r)];
      if (attrs.ignore_index && t == *attrs.ignore_index) continue;
      if (t < 0 || t >= s.c)
        return node.error(StatusCode::kInvalidArgument, "target " + std::to_string(t) + " (at element " +
                                                            std::to_string(r) + ") is outside [0, " +
                                                            std::to_string(s.c) + ")");
      const float w = weight ? weight[t] : 1.f;
      const float loss = -logp[(n * s.c + t) * s.d + d] * w;
      if (none) out[static_cast<size_t>(r)] = loss;
      sum += loss;
      wsum += w;
    }
  }
  // mean over no applied weight is 0 / 0 = NaN, as in the ONNX reference.
  if (!none) out[0] = static_cast<float>(attrs.reduction == LossReduction::kSum ? sum : sum / wsum);
  return ok_status();
}

Status nll_loss_to_output(KernelContext& ctx, const LossAttrs& attrs, const LossShape& s, const float* logp) {
  const std::vector<int64_t> target = read_int_values(ctx.input(1));
  const TensorRef& y = ctx.output(0);
  return dispatch<kFloats>(y.dtype, ctx.node().describe(), [&]<typename T>() {
    std::optional<FloatView<T>> w;
    if (ctx.has_input(2)) w.emplace(ctx.input(2).as<T>(), s.c);
    std::vector<float> out;
    SRT_RETURN_IF_ERROR(nll_loss_cpu(ctx.node(), attrs, s, logp, target, w ? w->get() : nullptr, out));
    for (size_t i = 0; i < out.size(); ++i) y.as<T>()[i] = store<T>(out[i]);
    return ok_status();
  });
}

namespace {

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(LossAttrs attrs, read_loss_attrs(ctx.node()));
  return infer_loss(ctx, attrs);
}

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(LossAttrs attrs, read_loss_attrs(ctx.node()));
  SRT_ASSIGN_OR_RETURN(LossShape s, check_loss_kernel(ctx, attrs));
  const TensorRef& x = ctx.input(0);
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    FloatView<T> logp(x.as<T>(), x.numel());
    return nll_loss_to_output(ctx, attrs, s, logp.get());
  });
}

}  // namespace

STREAMRT_REGISTER_OP(NegativeLogLikelihoodLoss, {.op_type = "NegativeLogLikelihoodLoss", .min_opset = 12,
                                                 .infer = infer, .cpu = cpu, .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
