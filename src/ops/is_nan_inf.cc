// IsNaN (opset 9; 13 adds bfloat16, 20 float8 types, which streamrt lacks) and IsInf (opset 10;
// detect_negative / detect_positive, both default 1): float types in, bool out, same shape.
// The CUDA twin is backends/cuda/kernels/is_nan_inf.cu.
#include <cmath>

#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

struct InfFlags {
  bool negative = true;
  bool positive = true;
};

Result<InfFlags> inf_flags(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t neg, node.attr_int("detect_negative", 1));
  SRT_ASSIGN_OR_RETURN(int64_t pos, node.attr_int("detect_positive", 1));
  return InfFlags{neg != 0, pos != 0};
}

Status infer(InferContext& ctx) {
  if (ctx.node().op_type == "IsInf") SRT_RETURN_IF_ERROR(inf_flags(ctx.node()).status());
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  ctx.set_output_like(0, DataType::kBool, 0);
  return ok_status();
}

// y[i] = pred(float(x[i])) for a float input and a bool output of as many elements.
template <typename Pred>
Status map_to_bool(KernelContext& ctx, Pred&& pred) {
  SRT_RETURN_IF_ERROR(check_same_numel(ctx, 0, 0));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  if (y.dtype != DataType::kBool) return ctx.error("output must be bool");
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* px = x.as<T>();
    bool* py = y.as<bool>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = pred(static_cast<float>(load(px[i])));
    return ok_status();
  });
}

Status is_nan_cpu(KernelContext& ctx) {
  return map_to_bool(ctx, [](float v) { return std::isnan(v); });
}

Status is_inf_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(InfFlags f, inf_flags(ctx.node()));
  return map_to_bool(ctx, [f](float v) { return std::isinf(v) && (v > 0 ? f.positive : f.negative); });
}

}  // namespace

STREAMRT_REGISTER_OP(IsNaN, {.op_type = "IsNaN", .min_opset = 9, .infer = infer, .cpu = is_nan_cpu,
                             .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(IsInf, {.op_type = "IsInf", .min_opset = 10, .infer = infer, .cpu = is_inf_cpu,
                             .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
