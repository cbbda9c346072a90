// Clip: y = min(max(x, lo), hi). Opset < 11 takes float attributes 'min' / 'max'; opset >= 11
// takes optional scalar inputs 1 (min) and 2 (max) of x's dtype. A missing bound is unbounded.
// When lo > hi every element becomes hi (as the ONNX spec says). NaN passes through.
#include <limits>

#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

constexpr int kBoundsAsInputsSince = 11;

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kNumeric));
  if (ctx.opset() < kBoundsAsInputsSince) {
    if (!is_floating_point(ctx.input_dtype(0)))
      return ctx.unsupported(std::string("Clip before opset 11 takes float inputs, got ") +
                             dtype_name(ctx.input_dtype(0)));
    SRT_RETURN_IF_ERROR(ctx.node().attr_float("min", 0.f).status());
    SRT_RETURN_IF_ERROR(ctx.node().attr_float("max", 0.f).status());
  } else {
    for (size_t i = 1; i <= 2; ++i) {
      if (!ctx.has_input(i)) continue;
      SRT_RETURN_IF_ERROR(require_same_dtype(ctx, 0, i));
      const TensorInfo& b = ctx.input(i);
      if (b.has_shape && dims_static(b.dims) && dims_numel(b.dims) != 1)
        return ctx.error(std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " +
                         dims_to_string(b.dims));
    }
  }
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// Reads bound input `i` (one element of x's type) into `out` if present.
template <typename T>
Status read_bound(const KernelContext& ctx, size_t i, compute_t<T>& out) {
  if (!ctx.has_input(i)) return ok_status();
  const TensorRef& b = ctx.input(i);
  if (b.dtype != ctx.input(0).dtype || b.numel() != 1)
    return ctx.error(std::string(i == 1 ? "min" : "max") + " must be a scalar " +
                     dtype_name(ctx.input(0).dtype) + ", got " + dtype_name(b.dtype) + " of shape " +
                     dims_to_string(b.dims));
  out = load(b.as<T>()[0]);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_same_numel(ctx, 0, 0));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  return dispatch<kNumeric>(x.dtype, ctx.node().describe(), [&]<typename T>() -> Status {
    using C = compute_t<T>;
    C lo = std::numeric_limits<C>::lowest();
    C hi = std::numeric_limits<C>::max();
    if (ctx.opset() < kBoundsAsInputsSince) {
      if constexpr (std::is_floating_point_v<C>) {
        SRT_ASSIGN_OR_RETURN(lo, ctx.node().attr_float("min", lo));
        SRT_ASSIGN_OR_RETURN(hi, ctx.node().attr_float("max", hi));
      } else {
        return ctx.unsupported("Clip before opset 11 takes float inputs");
      }
    } else {
      SRT_RETURN_IF_ERROR(read_bound<T>(ctx, 1, lo));
      SRT_RETURN_IF_ERROR(read_bound<T>(ctx, 2, hi));
    }
    const T* px = x.as<T>();
    T* py = y.as<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      C v = load(px[i]);
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      py[i] = store<T>(v);
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Clip, {.op_type = "Clip", .min_opset = 6, .infer = infer, .cpu = cpu,
                            .cpu_dtypes = dtypes(kNumeric)});

}  // namespace streamrt::ops
