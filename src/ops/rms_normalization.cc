// RMSNormalization (ONNX opset 23 semantics; the builder also fuses the
// Pow-ReduceMean-Add-Sqrt-Div/Reciprocal pattern into it): Y = X / sqrt(mean(X^2 over axes
// [axis, rank)) + epsilon) * scale. Statistics in float32 whatever the I/O type.
#include "ops/rms_normalization.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  if (ctx.has_input(1) && ctx.input_dtype(1) != ctx.input_dtype(0))
    return ctx.error("scale must have X's type");
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// Plan load: axis within the input's rank (the kernel splits dims there).
Status verify(const InferContext& ctx) { return verify_axis_attr(ctx, "axis", -1); }

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.node().attr_int("axis", -1));
  SRT_ASSIGN_OR_RETURN(float eps, ctx.node().attr_float("epsilon", 1e-5f));
  SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node(), axis_attr, static_cast<int64_t>(x.dims.size())));
  int64_t n = 1;
  for (size_t d = static_cast<size_t>(axis); d < x.dims.size(); ++d) n *= x.dims[d];
  const int64_t rows = n ? x.numel() / n : 0;
  const bool has_scale = ctx.has_input(1);
  const int64_t scale_n = has_scale ? ctx.input(1).numel() : 1;
  if (has_scale && (scale_n == 0 || n % scale_n != 0))
    return ctx.error("scale of " + std::to_string(scale_n) + " elements does not fit rows of " + std::to_string(n));
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    rms_norm_rows<T>(x.as<const T>(), has_scale ? ctx.input(1).as<const T>() : nullptr, scale_n, ctx.output(0).as<T>(),
                rows, n, eps);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(RMSNormalization, {.op_type = "RMSNormalization", .infer = infer, .cpu = cpu, .verify = verify,
                                        .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
