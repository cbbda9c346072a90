// Trilu (opset 14): keeps the upper (upper = 1, default) or lower triangle of the last two axes
// of a batch of matrices, zeroing the rest. Optional int64 scalar k shifts the diagonal:
// upper keeps j - i >= k, lower keeps j - i <= k. Works on bytes, so every data type is supported.
#include <algorithm>
#include <cstring>

#include "ops/common.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  if (ctx.input(0).has_shape && ctx.input_dims(0).size() < 2)
    return ctx.error("input must have rank >= 2, got shape " + dims_to_string(ctx.input_dims(0)));
  if (ctx.has_input(1)) {
    if (ctx.input_dtype(1) != DataType::kInt64)
      return ctx.error(std::string("k must be int64, got ") + dtype_name(ctx.input_dtype(1)));
    const Dims& kd = ctx.input_dims(1);
    if (ctx.input(1).has_shape && dims_static(kd) && dims_numel(kd) != 1)
      return ctx.error("k must be a scalar, got shape " + dims_to_string(kd));
  }
  SRT_ASSIGN_OR_RETURN(int64_t upper, ctx.node().attr_int("upper", 1));
  (void)upper;  // read so a wrongly typed attribute fails at build time
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  if (x.dims.size() < 2) return ctx.error("input must have rank >= 2, got shape " + dims_to_string(x.dims));
  int64_t k = 0;
  if (ctx.has_input(1)) {
    if (ctx.input(1).numel() != 1 || ctx.input(1).dtype != DataType::kInt64)
      return ctx.error("k must be an int64 scalar");
    k = read_int_values(ctx.input(1))[0];
  }
  SRT_ASSIGN_OR_RETURN(int64_t upper, ctx.node().attr_int("upper", 1));
  const size_t rank = x.dims.size();
  const int64_t rows = x.dims[rank - 2], cols = x.dims[rank - 1];
  if (x.numel() == 0) return ok_status();
  // Beyond these bounds k changes nothing; clamping keeps i + k from overflowing.
  k = std::clamp<int64_t>(k, -rows, cols);
  const size_t es = dtype_size(x.dtype);
  const int64_t batch = x.numel() / (rows * cols);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      // Kept columns [lo, hi).
      const int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      const int64_t hi = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      const size_t row = static_cast<size_t>((b * rows + i) * cols) * es;
      // Zero only outside [lo, hi), and memmove: safe if the output aliases the input.
      if (hi <= lo) {
        std::memset(dst + row, 0, static_cast<size_t>(cols) * es);
        continue;
      }
      std::memset(dst + row, 0, static_cast<size_t>(lo) * es);
      std::memmove(dst + row + lo * es, src + row + lo * es, static_cast<size_t>(hi - lo) * es);
      std::memset(dst + row + hi * es, 0, static_cast<size_t>(cols - hi) * es);
    }
  }
  return ok_status();
}

}  // namespace

// k is a shape input: device backends read it on the host (it picks which elements survive).
STREAMRT_REGISTER_OP(Trilu, {.op_type = "Trilu", .min_opset = 14, .infer = infer, .cpu = cpu, .shape_inputs = {1},
                             .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
