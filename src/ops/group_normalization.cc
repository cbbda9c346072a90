// GroupNormalization: the channels of each image split into num_groups groups, each normalized
// with its own mean and variance: y = (x - mean) / sqrt(var + epsilon) * scale + bias. Opset 18
// has one scale / bias value per group; opset 21 one per channel, and stash_type (the precision
// of the statistics: the CPU computes them in double, CUDA in float, whatever it says).
#include "ops/group_normalization.h"

#include "ops/data_movement.h"
#include "ops/norm_rows.h"

namespace streamrt::ops {

Result<GroupNormGeometry> group_norm_geometry(const ir::Node& node, const Dims& x) {
  auto bad = [&](const std::string& m) { return node.error(StatusCode::kInvalidModel, m); };
  GroupNormGeometry g;
  SRT_ASSIGN_OR_RETURN(g.groups, node.attr_int("num_groups"));
  SRT_ASSIGN_OR_RETURN(g.epsilon, node.attr_float("epsilon", 1e-5f));
  SRT_ASSIGN_OR_RETURN(int64_t stash, node.attr_int("stash_type", 1));
  if (stash != 1 && stash != 10 && stash != 11 && stash != 16)
    return node.error(StatusCode::kUnsupported, "stash_type " + std::to_string(stash) + " is not a float type");
  if (g.groups < 1 || g.groups > kMaxAttrExtent) return bad("num_groups " + std::to_string(g.groups) + " is out of range");
  if (x.size() < 2) return bad("X has shape " + dims_to_string(x) + ", expected rank >= 2");
  const int64_t c = x[1];
  if (c % g.groups != 0) return bad("num_groups " + std::to_string(g.groups) + " does not divide C = " + std::to_string(c));
  g.spatial = dims_product(x, 2, x.size());
  g.rows = x[0] * g.groups;
  g.cols = c / g.groups * g.spatial;
  g.params = node.opset >= 21 ? c : g.groups;
  g.param_div = node.opset >= 21 ? g.spatial : g.cols;
  return g;
}

namespace {

// Scale / bias: one value per group (opset 18) or per channel (21).
Status check_param(const InferContext& ctx, size_t i, const char* name) {
  SRT_ASSIGN_OR_RETURN(int64_t groups, ctx.node().attr_int("num_groups"));
  if (ctx.opset() < 21) return check_norm_param(ctx, i, name, groups, "group");
  const int64_t c = ctx.input(0).has_shape && ctx.input_dims(0).size() >= 2 ? ctx.input_dims(0)[1] : -1;
  return check_norm_param(ctx, i, name, c, "channel");
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  SRT_RETURN_IF_ERROR(check_param(ctx, 1, "scale"));
  SRT_RETURN_IF_ERROR(check_param(ctx, 2, "bias"));
  if (ctx.input(0).has_shape) {
    Dims x = ctx.input_dims(0);
    if (x.size() >= 2 && x[1] < 0) x[1] = 0;  // C unknown: nothing to check there yet
    for (int64_t& d : x) d = d < 0 ? 1 : d;
    SRT_RETURN_IF_ERROR(group_norm_geometry(ctx.node(), x).status());
  }
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

Status verify(const InferContext& ctx) { return verify_attr_range(ctx.node(), "num_groups", 1, kMaxAttrExtent); }

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(GroupNormGeometry g, group_norm_geometry(ctx.node(), x.dims));
  for (size_t i = 1; i < 3; ++i)
    if (!ctx.has_input(i) || ctx.input(i).dims != Dims{g.params} || ctx.input(i).dtype != x.dtype)
      return ctx.error("input " + std::to_string(i) + " must be [" + std::to_string(g.params) + "] of X's type");
  if (x.numel() == 0) return ok_status();
  RowNorm s = contiguous_rows(g.rows, g.cols);
  s.epsilon = g.epsilon;
  s.param_div = g.param_div;
  SRT_ASSIGN_OR_RETURN(s.scale, param_floats(ctx, 1));
  SRT_ASSIGN_OR_RETURN(s.bias, param_floats(ctx, 2));
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    normalize_rows<T>(s, x.as<T>(), ctx.output(0).as<T>());
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(GroupNormalization,
                     {.op_type = "GroupNormalization", .min_opset = 18, .infer = infer, .cpu = cpu, .verify = verify,
                                                               .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
