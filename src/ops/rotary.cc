// Rotary: rotary position embedding in the "rotate half" form Llama-style models export,
//   Y = X * cos + rotate_half(X) * sin,  rotate_half(X)[..., i] = -X[..., i + D/2] (i < D/2)
//                                                                   X[..., i - D/2] (i >= D/2)
// over the last axis (D even). cos and sin broadcast (numpy) to X's shape without enlarging it.
// Built by the builder's fuse_rotary pass from Slice / Neg / Concat / Mul / Add; like the other
// fused ops it lives in the default domain. Computed in float, rounded once.
// Two rotations in one step (builder/pair_rotaries.cc: a layer's Q and K): inputs X, cos, sin,
// X2, cos2, sin2 and outputs Y, Y2, each Y from its own three inputs (kRotaryParts).
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

// The rotations a step holds (1 or 2) from its input and output counts; 0 when they do not fit.
size_t parts_of(size_t inputs, size_t outputs) {
  return (inputs == 3 && outputs == 1) || (inputs == 6 && outputs == 2) ? outputs : 0;
}

Status infer(InferContext& ctx) {
  const size_t parts = parts_of(ctx.num_inputs(), ctx.num_outputs());
  if (parts == 0) return ctx.error("expected inputs X, cos, sin (and X2, cos2, sin2 with a second output)");
  for (size_t i = 0; i < 3 * parts; ++i) SRT_RETURN_IF_ERROR(require_input(ctx, i, kFloats));
  const DataType t = ctx.input_dtype(0);
  for (size_t i = 1; i < 3 * parts; ++i)
    if (ctx.input_dtype(i) != t) return ctx.error("X, cos and sin (and X2, cos2, sin2) must share one float type");
  for (size_t k = 0; k < parts; ++k) {
    if (ctx.input(3 * k).has_shape) {
      const Dims& x = ctx.input_dims(3 * k);
      if (x.empty()) return ctx.error("X must have at least one axis");
      if (x.back() >= 0 && x.back() % 2 != 0)
        return ctx.error("the last axis of X must be even, got " + std::to_string(x.back()));
    }
    ctx.set_output_like(k, t, 3 * k);
  }
  return ok_status();
}

Status rotate(const KernelContext& ctx, const TensorRef& x, const TensorRef& c, const TensorRef& s, const TensorRef& y) {
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

Status cpu(KernelContext& ctx) {
  const size_t parts = parts_of(ctx.num_inputs(), ctx.num_outputs());
  if (parts == 0) return ctx.error("expected inputs X, cos, sin (and X2, cos2, sin2 with a second output)");
  for (size_t k = 0; k < parts; ++k)
    SRT_RETURN_IF_ERROR(rotate(ctx, ctx.input(3 * k), ctx.input(3 * k + 1), ctx.input(3 * k + 2), ctx.output(k)));
  return ok_status();
}

}  // namespace

size_t rotary_parts(size_t inputs, size_t outputs) { return parts_of(inputs, outputs); }

Status rotary_check_broadcast(const ir::Node& node, const Dims& x, const Dims& c, const Dims& s) {
  return check_broadcast(node, x, c, s);
}

STREAMRT_REGISTER_OP(Rotary, {.op_type = "Rotary", .infer = infer, .cpu = cpu, .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
