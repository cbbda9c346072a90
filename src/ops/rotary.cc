// Rotary: rotary position embedding in the "rotate half" form Llama-style models export,
//   Y = X * cos + rotate_half(X) * sin,  rotate_half(X)[..., i] = -X[..., i + D/2] (i < D/2)
//                                                                   X[..., i - D/2] (i >= D/2)
// over the last axis (D even). cos and sin broadcast (numpy) to X's shape without enlarging it.
// Built by the builder's fuse_rotary pass from Slice / Neg / Concat / Mul / Add; like the other
// fused ops it lives in the default domain. Computed in float, rounded once.
#include "ops/rotary.h"

#include "ops/common.h"

namespace streamrt::ops {
namespace {

Status check_broadcast(const ir::Node& node, const Dims& x, const Dims& c, const Dims& s) {
  auto all = broadcast_all({x, c, s});
  if (!all.ok()) return all.status().with_context(node.describe());
  if (*all != x)
    return invalid_argument(node.describe() + ": cos " + dims_to_string(c) + " and sin " + dims_to_string(s) +
                            " must broadcast to X's shape " + dims_to_string(x));
  return ok_status();
}

Status infer(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) SRT_RETURN_IF_ERROR(require_input(ctx, i, kFloats));
  const DataType t = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != t || ctx.input_dtype(2) != t) return ctx.error("X, cos and sin must share one float type");
  if (ctx.input(0).has_shape) {
    const Dims& x = ctx.input_dims(0);
    if (x.empty()) return ctx.error("X must have at least one axis");
    if (x.back() >= 0 && x.back() % 2 != 0) return ctx.error("the last axis of X must be even, got " + std::to_string(x.back()));
  }
  ctx.set_output_like(0, t, 0);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  const TensorRef &x = ctx.input(0), &c = ctx.input(1), &s = ctx.input(2);
  const TensorRef& y = ctx.output(0);
  SRT_RETURN_IF_ERROR(check_broadcast(ctx.node(), x.dims, c.dims, s.dims));
  if (x.numel() == 0) return ok_status();
  const int64_t d = x.dims.back(), h = d / 2;
  if (d % 2 != 0) return ctx.error("the last axis of X must be even, got " + std::to_string(d));
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T *px = x.as<T>(), *pc = c.as<T>(), *ps = s.as<T>();
    T* py = y.as<T>();
    for_each_broadcast<3>(x.dims, {x.dims, c.dims, s.dims}, [&](int64_t i, const std::array<int64_t, 3>& off) {
      const int64_t j = i % d;
      const float r = j < h ? -static_cast<float>(load(px[i + h])) : static_cast<float>(load(px[i - h]));
      py[i] = store<T>(static_cast<float>(load(px[i])) * static_cast<float>(load(pc[off[1]])) +
                       r * static_cast<float>(load(ps[off[2]])));
    });
    return ok_status();
  });
}

}  // namespace

Status rotary_check_broadcast(const ir::Node& node, const Dims& x, const Dims& c, const Dims& s) {
  return check_broadcast(node, x, c, s);
}

STREAMRT_REGISTER_OP(Rotary, {.op_type = "Rotary", .infer = infer, .cpu = cpu, .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
