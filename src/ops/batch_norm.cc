// BatchNormalization, inference form: y = scale * (x - mean) / sqrt(var + epsilon) + B per
// channel (axis 1). Training mode (opset 14's training_mode=1, or the running-statistics
// outputs of older opsets) is kUnsupported. Opsets 7/8 'spatial=0' takes per-element
// parameters of shape X.dims[1:]. Opsets 1 and 6 (consumed_inputs, is_test=0 meaning
// training) are refused: min_opset 7.
#include <cmath>

#include "ops/common.h"

namespace streamrt::ops {
namespace {

const char* const kParamNames[] = {"scale", "B", "mean", "var"};

Status check_mode(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t training, node.attr_int("training_mode", 0));
  if (training != 0)
    return node.error(StatusCode::kUnsupported, "training_mode=1 is not supported (inference only)");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != ir::kNoValue)
      return node.error(StatusCode::kUnsupported,
                        "output " + std::to_string(i) + " (training statistics) is not supported");
  return ok_status();
}

// Number of values each parameter holds: C, or prod(X.dims[1:]) when spatial=0; -1 unknown.
Result<int64_t> param_size(const ir::Node& node, const Dims& x) {
  SRT_ASSIGN_OR_RETURN(int64_t spatial, node.attr_int("spatial", 1));
  if (spatial != 0 || node.opset >= 9) return x[1];
  int64_t n = 1;
  for (size_t i = 1; i < x.size(); ++i) {
    if (x[i] < 0) return int64_t{-1};
    n *= x[i];
  }
  return n;
}

Status check_params(const ir::Node& node, const Dims& x, const std::vector<const Dims*>& params) {
  if (x.size() < 2) return node.error(StatusCode::kInvalidModel, "X has shape " + dims_to_string(x) + ", expected rank >= 2");
  SRT_ASSIGN_OR_RETURN(int64_t want, param_size(node, x));
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i]) continue;
    const Dims& p = *params[i];
    if (!dims_static(p) || want < 0) continue;
    if (dims_numel(p) != want || (p.size() != 1 && p.size() + 1 != x.size()))
      return node.error(StatusCode::kInvalidModel,
                        std::string(kParamNames[i]) + " has shape " + dims_to_string(p) + ", expected " +
                            std::to_string(want) + " values for X " + dims_to_string(x));
  }
  return ok_status();
}

Status infer(InferContext& ctx) {
  for (size_t i = 0; i < 5; ++i) SRT_RETURN_IF_ERROR(require_input(ctx, i, kFloats));
  SRT_RETURN_IF_ERROR(check_mode(ctx.node()));
  if (ctx.input(0).has_shape) {
    std::vector<const Dims*> params;
    for (size_t i = 1; i < 5; ++i) params.push_back(ctx.input(i).has_shape ? &ctx.input_dims(i) : nullptr);
    SRT_RETURN_IF_ERROR(check_params(ctx.node(), ctx.input_dims(0), params));
  }
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// Parameter `i` (input i + 1) widened to float.
Result<std::vector<float>> param_values(const KernelContext& ctx, size_t i) {
  const TensorRef& p = ctx.input(i + 1);
  return Tensor::view(p.dtype, p.dims, p.data, nullptr).to_float_vector();
}

Status cpu(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  SRT_RETURN_IF_ERROR(check_mode(node));
  const TensorRef& x = ctx.input(0);
  std::vector<const Dims*> params;
  for (size_t i = 1; i < 5; ++i) {
    if (!ctx.has_input(i)) return ctx.error("missing input " + std::to_string(i));
    params.push_back(&ctx.input(i).dims);
  }
  SRT_RETURN_IF_ERROR(check_params(node, x.dims, params));
  SRT_ASSIGN_OR_RETURN(float eps, node.attr_float("epsilon", 1e-5f));
  std::vector<float> v[4];
  for (size_t i = 0; i < 4; ++i) {
    SRT_ASSIGN_OR_RETURN(v[i], param_values(ctx, i));
  }
  // Fold into y = x * a + c per parameter slot.
  const size_t slots = v[0].size();
  std::vector<float> a(slots), c(slots);
  for (size_t k = 0; k < slots; ++k) {
    a[k] = v[0][k] / std::sqrt(v[3][k] + eps);
    c[k] = v[1][k] - v[2][k] * a[k];
  }
  const int64_t outer = x.dims[0];
  const int64_t inner = x.dims[1] == 0 ? 0 : x.numel() / std::max<int64_t>(outer, 1) / x.dims[1];
  const bool per_channel = static_cast<int64_t>(slots) == x.dims[1];
  return dispatch<kFloats>(x.dtype, node.describe(), [&]<typename T>() {
    const T* px = x.as<T>();
    T* py = ctx.output(0).as<T>();
    for (int64_t n = 0, i = 0; n < outer; ++n)
      for (int64_t ch = 0; ch < x.dims[1]; ++ch)
        for (int64_t s = 0; s < inner; ++s, ++i) {
          const size_t k = static_cast<size_t>(per_channel ? ch : ch * inner + s);
          py[i] = store<T>(load(px[i]) * a[k] + c[k]);
        }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(BatchNormalization,
                     {.op_type = "BatchNormalization", .min_opset = 7, .infer = infer, .cpu = cpu,
                                                               .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
