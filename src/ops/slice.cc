// Slice: starts/ends/axes are attributes before opset 10 and inputs (with steps) from 10 on.
// Out-of-range starts and ends are clamped exactly as the ONNX spec says (so INT64_MAX and
// INT64_MIN ends mean "to the end" / "to the front"); negative steps walk backwards.
// Slicing a partly known shape vector keeps the known elements it picks.
#include <algorithm>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/partial_ints.h"
#include "ops/slice.h"

namespace streamrt::ops {
namespace {

// One sliced axis after clamping: the first index, the step and the number of elements.
struct AxisSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t len = 0;
};

// The spec's clamping for an axis of static length `dim`.
AxisSlice clamp_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim == 0) return {0, step, 0};
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t diff;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    diff = end - start;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    diff = start - end;
  }
  // ceil(diff / |step|) written so that no step (not even INT64_MIN) overflows.
  int64_t len = diff <= 0 ? 0 : (step > 0 ? 1 + (diff - 1) / step : 1 - (diff - 1) / step);
  return {start, step, len};
}

// The validated parameters: for each sliced axis (normalized), its start, end and step.
struct SliceParams {
  std::vector<int64_t> axes, starts, ends, steps;
};

Result<SliceParams> make_params(const ir::Node& node, int64_t rank, std::vector<int64_t> starts,
                                std::vector<int64_t> ends, std::optional<std::vector<int64_t>> axes,
                                std::optional<std::vector<int64_t>> steps) {
  auto fail = [&](const std::string& msg) { return node.error(StatusCode::kInvalidModel, msg); };
  const size_t n = starts.size();
  if (ends.size() != n)
    return fail("starts has " + std::to_string(n) + " values, ends " + std::to_string(ends.size()));
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < n; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (!steps) steps = std::vector<int64_t>(n, 1);
  if (axes->size() != n) return fail("axes has " + std::to_string(axes->size()) + " values, starts " + std::to_string(n));
  if (steps->size() != n) return fail("steps has " + std::to_string(steps->size()) + " values, starts " + std::to_string(n));
  for (int64_t s : *steps)
    if (s == 0) return fail("step 0 is invalid");
  SRT_ASSIGN_OR_RETURN(auto norm, normalize_axes(node, *axes, rank));
  return SliceParams{std::move(norm), std::move(starts), std::move(ends), std::move(*steps)};
}

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  const DataType dt = ctx.input_dtype(0);
  const TensorInfo& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(IntList starts, read_int_list(ctx, 1, "starts"));
  SRT_ASSIGN_OR_RETURN(IntList ends, read_int_list(ctx, 2, "ends"));
  SRT_ASSIGN_OR_RETURN(IntList axes, read_int_list(ctx, 3, "axes"));
  SRT_ASSIGN_OR_RETURN(IntList steps, read_int_list(ctx, 4, "steps"));
  if (!starts.given || !ends.given) return ctx.error("missing starts or ends");
  if (!x.has_shape) {
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  Dims out = x.dims;
  const bool axes_known = !axes.given || axes.values;
  if (!starts.values || !ends.values || (steps.given && !steps.values)) {
    // Bounds unknown: the sliced axes become dynamic (all axes, if they are unknown too).
    if (axes.values) {
      SRT_ASSIGN_OR_RETURN(auto norm, normalize_axes(ctx.node(), *axes.values, rank));
      for (int64_t a : norm) out[a] = kDynamicDim;
    } else if (!axes_known) {
      std::fill(out.begin(), out.end(), kDynamicDim);
    } else {
      // Default axes 0..n-1, where n is the (static) length of starts.
      int64_t n = starts.values ? static_cast<int64_t>(starts.values->size()) : static_length_1d(ctx, 1);
      if (n < 0 || n > rank) n = rank;
      std::fill(out.begin(), out.begin() + n, kDynamicDim);
    }
    ctx.set_output(0, dt, std::move(out));
    return ok_status();
  }
  if (!axes_known) {
    std::fill(out.begin(), out.end(), kDynamicDim);
    ctx.set_output(0, dt, std::move(out));
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(SliceParams p, make_params(ctx.node(), rank, *starts.values, *ends.values,
                                                  axes.values, steps.values));
  for (size_t i = 0; i < p.axes.size(); ++i) {
    const int64_t a = p.axes[i];
    out[a] = out[a] < 0 ? kDynamicDim : clamp_axis(out[a], p.starts[i], p.ends[i], p.steps[i]).len;
  }
  ctx.set_output(0, dt, std::move(out));
  if (rank == 1 && p.axes.size() == 1 && !ctx.input_value(0)) {
    // A slice of a partly known shape vector (Shape(x)[1:3]) keeps the elements it picks.
    if (auto in = ctx.input_partial(0)) {
      AxisSlice s = clamp_axis(static_cast<int64_t>(in->size()), p.starts[0], p.ends[0], p.steps[0]);
      PartialInts picked;
      for (int64_t k = 0; k < s.len; ++k) picked.push_back((*in)[static_cast<size_t>(s.start + k * s.step)]);
      ctx.set_output_partial(0, std::move(picked));
    }
  }
  return ok_status();
}

}  // namespace

Result<SliceView> resolve_slice(const ir::Node& node, const Dims& in_dims, std::vector<int64_t> starts,
                                std::vector<int64_t> ends, std::optional<std::vector<int64_t>> axes,
                                std::optional<std::vector<int64_t>> steps) {
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  SRT_ASSIGN_OR_RETURN(SliceParams p, make_params(node, rank, std::move(starts), std::move(ends),
                                                  std::move(axes), std::move(steps)));
  // A strided view of the input: per-dim start offset and step-scaled strides.
  const auto in_strides = dense_strides(in_dims);
  SliceView v{in_dims, in_strides, 0};
  for (size_t i = 0; i < p.axes.size(); ++i) {
    const size_t a = static_cast<size_t>(p.axes[i]);
    AxisSlice s = clamp_axis(in_dims[a], p.starts[i], p.ends[i], p.steps[i]);
    v.out_dims[a] = s.len;
    if (s.len == 0) continue;
    v.offset += s.start * in_strides[a];
    // With one element the stride is unused (and step * stride might overflow).
    v.strides[a] = s.len > 1 ? s.step * in_strides[a] : 0;
  }
  return v;
}

namespace {

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(auto starts, int_list_input_or_attr(ctx, 1, "starts"));
  SRT_ASSIGN_OR_RETURN(auto ends, int_list_input_or_attr(ctx, 2, "ends"));
  SRT_ASSIGN_OR_RETURN(auto axes, int_list_input_or_attr(ctx, 3, "axes"));
  SRT_ASSIGN_OR_RETURN(auto steps, int_list_input_or_attr(ctx, 4, "steps"));
  if (!starts || !ends) return ctx.error("missing starts or ends");
  SRT_ASSIGN_OR_RETURN(SliceView v, resolve_slice(ctx.node(), x.dims, std::move(*starts), std::move(*ends),
                                                  std::move(axes), std::move(steps)));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, v.out_dims));
  strided_copy(y.data, x.data, dtype_size(x.dtype), v.out_dims, v.strides, v.offset);
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Slice, {.op_type = "Slice", .infer = infer, .cpu = cpu, .shape_inputs = {1, 2, 3, 4},
                             .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
