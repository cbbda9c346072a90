// Reshape and Flatten: new dims over the same bytes (the kernel is a plain copy). A Reshape
// target known only in part (PartialInts) still fixes the dims it gives.
#include <algorithm>
#include <set>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/partial_ints.h"

namespace streamrt::ops {
namespace {

// Resolves a Reshape target against the input dims (`in` is nullptr when the rank is unknown;
// dims may be -1). 0 copies the input dim unless allowzero; one -1 is inferred. An inferred
// dim is computed even with dynamic input dims when each dynamic input dim is copied by a 0
// (the common "(0, 0, -1)" of transformer exports): the unknown factors then cancel.
// Elements of the target unknown at build time (Concat(Unsqueeze(seq), [8], [64]) over a
// dynamic seq) give dynamic dims; the other dims are still resolved, but then no -1 is inferred
// (an unknown element might be 0 or -1 at run time) and the element counts are not compared.
Result<Dims> resolve_target(const ir::Node& node, const Dims* in, const PartialInts& shape, bool allowzero) {
  auto fail = [&](const std::string& msg) { return node.error(StatusCode::kInvalidModel, msg); };
  Dims out(shape.size());
  int64_t inferred = -1;
  int64_t out_static = 1;   // product of the static output dims other than the inferred one
  bool out_unknown = false;  // an output dim is dynamic and not a copy of a dynamic input dim
  std::set<size_t> copied_dynamic;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i]) {
      out[i] = kDynamicDim;
      out_unknown = true;
      continue;
    }
    int64_t s = *shape[i];
    if (s < -1) return fail("shape value " + std::to_string(s) + " at index " + std::to_string(i) + " is invalid");
    if (s == -1) {
      if (inferred >= 0) return fail("shape has more than one -1");
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (s == 0) has_zero = true;
    if (s == 0 && !allowzero) {
      if (in && i >= in->size())
        return fail("shape value 0 at index " + std::to_string(i) + " copies a dim the rank-" +
                    std::to_string(in->size()) + " input does not have");
      s = in ? (*in)[i] : kDynamicDim;
      if (s < 0 && in) copied_dynamic.insert(i);
      else if (s < 0) out_unknown = true;
    }
    out[i] = s;
    if (s >= 0 && __builtin_mul_overflow(out_static, s, &out_static))
      return fail("shape " + partial_to_string(shape) + " has too many elements");
  }
  if (allowzero && has_zero && inferred >= 0)
    return fail("shape contains both 0 and -1 with allowzero=1");
  if (!in) {
    if (inferred >= 0) out[inferred] = kDynamicDim;
    return out;
  }
  int64_t in_static = 1;
  bool cancels = !out_unknown;  // every dynamic input dim is copied to the output
  for (size_t i = 0; i < in->size(); ++i) {
    if ((*in)[i] < 0) {
      if (!copied_dynamic.count(i)) cancels = false;
    } else if (__builtin_mul_overflow(in_static, (*in)[i], &in_static)) {
      return fail("input dims " + dims_to_string(*in) + " have too many elements");
    }
  }
  if (!cancels) {
    if (inferred >= 0) out[inferred] = kDynamicDim;
    return out;
  }
  if (inferred >= 0) {
    if (out_static == 0 || in_static % out_static != 0)
      return fail("cannot infer the -1 dim: " + std::to_string(in_static) + " elements do not divide into " +
                  std::to_string(out_static));
    out[inferred] = in_static / out_static;
  } else if (in_static != out_static) {
    return fail("cannot reshape " + dims_to_string(*in) + " to " + dims_to_string(out));
  }
  return out;
}

// The target shape values, as far as known: the input (opset >= 5) or the 'shape' attribute
// (opset 1).
Result<std::optional<PartialInts>> target_values(const InferContext& ctx) {
  using Opt = std::optional<PartialInts>;
  if (ctx.has_input(1)) {
    if (!ctx.input_value(1)) return ctx.input_partial(1);
    SRT_ASSIGN_OR_RETURN(auto v, known_int_values(ctx, 1, "shape"));
    return Opt(PartialInts(v.begin(), v.end()));
  }
  if (ctx.node().has_attr("shape")) {
    SRT_ASSIGN_OR_RETURN(auto v, ctx.node().attr_ints("shape"));
    return Opt(PartialInts(v.begin(), v.end()));
  }
  return ctx.error("missing the shape input");
}

Status reshape_infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  if (ctx.has_input(1) && ctx.input_dtype(1) != DataType::kInt64 && ctx.input_dtype(1) != DataType::kInt32)
    return ctx.error(std::string("shape input must be int64, got ") + dtype_name(ctx.input_dtype(1)));
  SRT_ASSIGN_OR_RETURN(int64_t allowzero, ctx.node().attr_int("allowzero", 0));
  SRT_ASSIGN_OR_RETURN(auto target, target_values(ctx));
  const DataType dt = ctx.input_dtype(0);
  if (!target) {
    // Unknown target: its length is the output rank when the shape input's length is static.
    int64_t len = static_length_1d(ctx, 1);
    if (len < 0) ctx.set_output_unranked(0, dt);
    else ctx.set_output(0, dt, Dims(static_cast<size_t>(len), kDynamicDim));
    return ok_status();
  }
  const TensorInfo& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(Dims out, resolve_target(ctx.node(), x.has_shape ? &x.dims : nullptr, *target,
                                                allowzero != 0));
  ctx.set_output(0, dt, std::move(out));
  forward_partial(ctx, dt);  // a reshaped shape vector keeps its known elements
  return ok_status();
}

// Plan load: Flatten's axis within [-rank, rank] (the copy is a plain byte copy, but the rank
// of its output follows from the axis).
Status verify(const InferContext& ctx) { return verify_axis_attr(ctx, "axis", 1, 0, 1); }

Status flatten_infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  SRT_ASSIGN_OR_RETURN(int64_t axis, ctx.node().attr_int("axis", 1));
  const TensorInfo& x = ctx.input(0);
  const DataType dt = ctx.input_dtype(0);
  if (!x.has_shape) {
    ctx.set_output(0, dt, {axis == 0 ? 1 : kDynamicDim, kDynamicDim});
    return ok_status();
  }
  // Flatten's axis may equal the rank (everything goes to the first output dim).
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > rank)
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  const size_t split = static_cast<size_t>(a);
  ctx.set_output(0, dt, {dims_product_or_dynamic(x.dims, 0, split),
                         dims_product_or_dynamic(x.dims, split, x.dims.size())});
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Reshape, {.op_type = "Reshape", .infer = reshape_infer, .cpu = copy_bytes_cpu,
                               .shape_inputs = {1}, .cpu_dtypes = kAnyDType, .view = true});
STREAMRT_REGISTER_OP(Flatten, {.op_type = "Flatten", .infer = flatten_infer, .cpu = copy_bytes_cpu,
                               .verify = verify, .cpu_dtypes = kAnyDType, .view = true});

}  // namespace streamrt::ops
