// Slice on CUDA. starts/ends/axes/steps come from the host copies of inputs 1..4 (Slice
// declares them shape inputs) or, before opset 10, the attributes. The effective start and step
// of each axis are computed on the host exactly as src/ops/slice.cc does (spec clamping,
// negative steps) and the copy is one device strided copy of that view.
#include <algorithm>

#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

// One sliced axis after clamping: the first index, the step and the number of elements.
struct AxisSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t len = 0;
};

// The spec's clamping for an axis of static length `dim` (as slice.cc).
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
  SRT_ASSIGN_OR_RETURN(auto norm, ops::normalize_axes(node, *axes, rank));
  return SliceParams{std::move(norm), std::move(starts), std::move(ends), std::move(*steps)};
}

Status slice_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  SRT_ASSIGN_OR_RETURN(auto starts, host_int_list(ctx, 1, "starts"));
  SRT_ASSIGN_OR_RETURN(auto ends, host_int_list(ctx, 2, "ends"));
  SRT_ASSIGN_OR_RETURN(auto axes, host_int_list(ctx, 3, "axes"));
  SRT_ASSIGN_OR_RETURN(auto steps, host_int_list(ctx, 4, "steps"));
  if (!starts || !ends) return ctx.error("missing starts or ends");
  SRT_ASSIGN_OR_RETURN(SliceParams p, make_params(ctx.node(), rank, std::move(*starts), std::move(*ends),
                                                  std::move(axes), std::move(steps)));
  // A strided view of the input: per-dim start offset and step-scaled strides.
  const auto in_strides = ops::dense_strides(x.dims);
  std::vector<int64_t> strides = in_strides;
  Dims out = x.dims;
  int64_t offset = 0;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    const size_t a = static_cast<size_t>(p.axes[i]);
    AxisSlice s = clamp_axis(x.dims[a], p.starts[i], p.ends[i], p.steps[i]);
    out[a] = s.len;
    if (s.len == 0) continue;
    offset += s.start * in_strides[a];
    // With one element the stride is unused (and step * stride might overflow).
    strides[a] = s.len > 1 ? s.step * in_strides[a] : 0;
  }
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, out));
  return strided_copy_cuda(y.data, x.data, dtype_size(x.dtype), out, strides, offset, ctx.stream(),
                           ctx.node().describe());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Slice, "Slice", slice_cuda);

}  // namespace streamrt::cuda
