// InstanceNormalization (opset 6): y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], with
// mean and variance over the spatial elements of each (n, c). X is [N, C, D1, ...].
#include "ops/norm_rows.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  if (ctx.input(0).has_shape && ctx.input_dims(0).size() < 3)
    return ctx.error("X has shape " + dims_to_string(ctx.input_dims(0)) + ", expected rank >= 3");
  const int64_t c = ctx.input(0).has_shape && ctx.input_dims(0).size() >= 2 ? ctx.input_dims(0)[1] : -1;
  SRT_RETURN_IF_ERROR(check_norm_param(ctx, 1, "scale", c, "channel"));
  SRT_RETURN_IF_ERROR(check_norm_param(ctx, 2, "B", c, "channel"));
  SRT_RETURN_IF_ERROR(ctx.node().attr_float("epsilon", 1e-5f).status());
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  if (x.dims.size() < 3 || !ctx.has_input(1) || !ctx.has_input(2))
    return ctx.error("expects X of rank >= 3, scale and B");
  const int64_t c = x.dims[1];
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input(i).dims != Dims{c} || ctx.input(i).dtype != x.dtype)
      return ctx.error("input " + std::to_string(i) + " has shape " + dims_to_string(ctx.input(i).dims) + ", expected [" +
                       std::to_string(c) + "] of X's type");
  if (x.numel() == 0) return ok_status();
  const int64_t spatial = x.numel() / (x.dims[0] * c);
  RowNorm s = contiguous_rows(x.dims[0] * c, spatial);
  SRT_ASSIGN_OR_RETURN(float eps, ctx.node().attr_float("epsilon", 1e-5f));
  s.epsilon = eps;
  SRT_ASSIGN_OR_RETURN(s.scale, param_floats(ctx, 1));
  SRT_ASSIGN_OR_RETURN(s.bias, param_floats(ctx, 2));
  s.param_div = spatial;  // element (r, k) belongs to channel r % C
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    normalize_rows<T>(s, x.as<T>(), ctx.output(0).as<T>());
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(InstanceNormalization,
                     {.op_type = "InstanceNormalization", .min_opset = 6, .infer = infer, .cpu = cpu,
                                                                  .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
