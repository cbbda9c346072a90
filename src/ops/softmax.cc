// Softmax and LogSoftmax.
//   opset < 13: the input is coerced to 2-D at `axis` (default 1): rows = prod(dims[:axis]),
//               each row of prod(dims[axis:]) elements is normalized on its own.
//   opset >= 13: normalized along the single axis `axis` (default -1).
// Numerically stable (the row maximum is subtracted before exp); half types compute in float.
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/softmax.h"

namespace streamrt::ops {

Result<int64_t> softmax_axis(const ir::Node& node, int64_t rank) {
  const bool legacy = node.opset < 13;
  SRT_ASSIGN_OR_RETURN(int64_t axis, node.attr_int("axis", legacy ? 1 : -1));
  const int64_t upper = node.opset < 11 ? rank : rank - 1;
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > upper)
    return node.error(StatusCode::kInvalidModel, "axis " + std::to_string(axis) +
                                                     " is out of range for rank " + std::to_string(rank));
  return a;
}

Result<SoftmaxGeometry> softmax_geometry(const ir::Node& node, const Dims& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  SRT_ASSIGN_OR_RETURN(int64_t axis, softmax_axis(node, rank));
  SoftmaxGeometry g;
  for (int64_t d = 0; d < axis; ++d) g.outer *= dims[d];
  if (node.opset < 13) {
    for (int64_t d = axis; d < rank; ++d) g.dim *= dims[d];
  } else {
    g.dim = dims[axis];
    for (int64_t d = axis + 1; d < rank; ++d) g.inner *= dims[d];
  }
  return g;
}

namespace {

using Geometry = SoftmaxGeometry;

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  if (ctx.input(0).has_shape) {
    // Validates the axis; dynamic dims do not matter for it.
    auto axis = softmax_axis(ctx.node(), static_cast<int64_t>(ctx.input_dims(0).size()));
    if (!axis.ok()) return axis.status();
  }
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

template <typename T>
void softmax_rows(const T* x, T* y, const Geometry& g, bool log_softmax) {
  std::vector<float> buf(static_cast<size_t>(g.dim));
  for (int64_t o = 0; o < g.outer; ++o) {
    for (int64_t j = 0; j < g.inner; ++j) {
      const int64_t base = o * g.dim * g.inner + j;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < g.dim; ++k) {
        buf[k] = static_cast<float>(load(x[base + k * g.inner]));
        mx = std::max(mx, buf[k]);
      }
      double sum = 0;  // double: long rows of small terms lose digits in float
      for (int64_t k = 0; k < g.dim; ++k) {
        const float e = std::exp(buf[k] - mx);
        sum += e;
        if (!log_softmax) buf[k] = e;
      }
      if (log_softmax) {
        const float log_sum = static_cast<float>(std::log(sum));
        for (int64_t k = 0; k < g.dim; ++k) y[base + k * g.inner] = store<T>(buf[k] - mx - log_sum);
      } else {
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t k = 0; k < g.dim; ++k) y[base + k * g.inner] = store<T>(buf[k] * inv);
      }
    }
  }
}

// Plan load: axis within the input's rank.
Status verify(const InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.input(0).has_shape) return ok_status();
  return softmax_axis(ctx.node(), static_cast<int64_t>(ctx.input_dims(0).size())).status();
}

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(Geometry g, softmax_geometry(ctx.node(), x.dims));
  const bool log_softmax = ctx.node().op_type == "LogSoftmax";
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    softmax_rows<T>(x.as<T>(), y.as<T>(), g, log_softmax);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Softmax, {.op_type = "Softmax", .infer = infer, .cpu = cpu, .verify = verify,
                               .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(LogSoftmax, {.op_type = "LogSoftmax", .infer = infer, .cpu = cpu, .verify = verify,
                                  .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
