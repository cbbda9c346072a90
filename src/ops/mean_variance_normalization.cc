// MeanVarianceNormalization (opsets 9, 13): y = (x - mean) / (sqrt(var) + 1e-9) with mean and
// variance over `axes` (default [0, 2, 3]), as the op's function body computes it (its epsilon is
// added to the standard deviation, not the variance).
#include "ops/mean_variance_normalization.h"

#include <algorithm>

#include "ops/data_movement.h"
#include "ops/norm_rows.h"

namespace streamrt::ops {

Result<std::vector<int64_t>> mvn_axes(const ir::Node& node, size_t rank) {
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, node.attr_ints("axes", std::vector<int64_t>{0, 2, 3}));
  SRT_ASSIGN_OR_RETURN(axes, normalize_axes(node, axes, static_cast<int64_t>(rank)));
  std::sort(axes.begin(), axes.end());
  return axes;
}

namespace {

constexpr double kMvnEpsilon = 1e-9;

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  if (ctx.input(0).has_shape) SRT_RETURN_IF_ERROR(mvn_axes(ctx.node(), ctx.input_dims(0).size()).status());
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

Status verify(const InferContext& ctx) {
  if (!ctx.input(0).has_shape) return ok_status();
  return mvn_axes(ctx.node(), ctx.input_dims(0).size()).status();
}

// Offsets of every element of the axes in (or out of) `axes`, row-major over those axes.
std::vector<int64_t> offsets(const Dims& x, const std::vector<int64_t>& axes, bool in_axes) {
  const std::vector<int64_t> strides = dense_strides(x);
  std::vector<int64_t> offs = {0};
  for (size_t d = 0; d < x.size(); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (reduced != in_axes) continue;
    std::vector<int64_t> next;
    for (int64_t base : offs)
      for (int64_t i = 0; i < x[d]; ++i) next.push_back(base + i * strides[d]);
    offs = std::move(next);
  }
  return offs;
}

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, mvn_axes(ctx.node(), x.dims.size()));
  if (x.numel() == 0) return ok_status();
  RowNorm s;
  s.row_base = offsets(x.dims, axes, false);
  s.col_off = offsets(x.dims, axes, true);
  s.epsilon = kMvnEpsilon;
  s.eps_after_sqrt = true;
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    normalize_rows<T>(s, x.as<T>(), ctx.output(0).as<T>());
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(MeanVarianceNormalization, {.op_type = "MeanVarianceNormalization", .min_opset = 9,
                                                 .infer = infer, .cpu = cpu, .verify = verify,
                                                 .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
