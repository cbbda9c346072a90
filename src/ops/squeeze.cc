// Squeeze and Unsqueeze: remove / insert unit dims (the kernel is a plain copy).
// 'axes' is an attribute before opset 13 and an (optional for Squeeze) input from 13 on.
#include <set>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/partial_ints.h"

namespace streamrt::ops {
namespace {

Status unsqueeze_dims(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  const DataType dt = ctx.input_dtype(0);
  SRT_ASSIGN_OR_RETURN(IntList axes, read_int_list(ctx, 1, "axes"));
  if (!axes.given) return ctx.error("missing axes");
  const TensorInfo& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (!axes.values) {
    // Unknown axes: the output rank is still known when their count is.
    int64_t n = static_length_1d(ctx, 1);
    if (n < 0) ctx.set_output_unranked(0, dt);
    else ctx.set_output(0, dt, Dims(static_cast<size_t>(rank + n), kDynamicDim));
    return ok_status();
  }
  const int64_t out_rank = rank + static_cast<int64_t>(axes.values->size());
  SRT_ASSIGN_OR_RETURN(auto norm, normalize_axes(ctx.node(), *axes.values, out_rank));
  std::set<int64_t> ones(norm.begin(), norm.end());
  Dims out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.push_back(ones.count(d) ? 1 : x.dims[next++]);
  ctx.set_output(0, dt, std::move(out));
  return ok_status();
}

Status squeeze_dims(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  const DataType dt = ctx.input_dtype(0);
  SRT_ASSIGN_OR_RETURN(IntList axes, read_int_list(ctx, 1, "axes"));
  const TensorInfo& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  Dims out;
  if (!axes.given) {
    // Which dims are 1 decides the rank: unknown while any dim is dynamic.
    for (int64_t d : x.dims) {
      if (d < 0) {
        ctx.set_output_unranked(0, dt);
        return ok_status();
      }
      if (d != 1) out.push_back(d);
    }
    ctx.set_output(0, dt, std::move(out));
    return ok_status();
  }
  if (!axes.values) {
    int64_t n = static_length_1d(ctx, 1);
    if (n < 0 || n > rank) ctx.set_output_unranked(0, dt);
    else ctx.set_output(0, dt, Dims(static_cast<size_t>(rank - n), kDynamicDim));
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(auto norm, normalize_axes(ctx.node(), *axes.values, rank));
  std::set<int64_t> drop(norm.begin(), norm.end());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t v = x.dims[static_cast<size_t>(d)];
    if (!drop.count(d)) {
      out.push_back(v);
    } else if (v >= 0 && v != 1) {
      return ctx.error("cannot squeeze axis " + std::to_string(d) + " of size " + std::to_string(v) +
                       " (input " + dims_to_string(x.dims) + ")");
    }
  }
  ctx.set_output(0, dt, std::move(out));
  return ok_status();
}

// Both keep the elements in order: a partly known shape vector stays partly known.
Status unsqueeze_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(unsqueeze_dims(ctx));
  forward_partial(ctx, ctx.input_dtype(0));
  return ok_status();
}

Status squeeze_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(squeeze_dims(ctx));
  forward_partial(ctx, ctx.input_dtype(0));
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Squeeze, {.op_type = "Squeeze", .infer = squeeze_infer, .cpu = copy_bytes_cpu,
                               .shape_inputs = {1}, .cpu_dtypes = kAnyDType, .view = true});
STREAMRT_REGISTER_OP(Unsqueeze, {.op_type = "Unsqueeze", .infer = unsqueeze_infer, .cpu = copy_bytes_cpu,
                                 .shape_inputs = {1}, .cpu_dtypes = kAnyDType, .view = true});

}  // namespace streamrt::ops
