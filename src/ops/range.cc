// Range (opset 11): output[i] = start + i * delta for i < max(ceil((limit - start) / delta), 0).
// start / limit / delta are scalars of one type (float32, int32, int64). The length is known at
// build time only when all three values are; otherwise the output is [-1].
#include <cmath>

#include "ops/common.h"
#include "ops/range.h"

namespace streamrt::ops {
namespace {

// Above this a length is certainly a corrupt or hostile model (and would not fit in memory).
constexpr int64_t kMaxRangeLength = int64_t{1} << 40;

bool range_type(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kInt32 || t == DataType::kInt64;
}

Result<int64_t> int_length(const ir::Node& node, int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0) return node.error(StatusCode::kInvalidArgument, "delta is 0");
  // 128-bit: limit - start cannot overflow.
  const __int128 diff = static_cast<__int128>(limit) - start;
  if (diff == 0 || (diff > 0) != (delta > 0)) return int64_t{0};
  const __int128 a = diff < 0 ? -diff : diff;
  const __int128 d = delta < 0 ? -static_cast<__int128>(delta) : delta;
  const __int128 n = (a + d - 1) / d;
  if (n > kMaxRangeLength)
    return node.error(StatusCode::kInvalidArgument, "length is too large (over 2^40 elements)");
  return static_cast<int64_t>(n);
}

Result<int64_t> float_length(const ir::Node& node, float start, float limit, float delta) {
  if (delta == 0.f) return node.error(StatusCode::kInvalidArgument, "delta is 0");
  // As onnxruntime: the difference in the input type, the division in double.
  const double n = std::ceil(static_cast<double>(limit - start) / static_cast<double>(delta));
  if (std::isnan(n)) return node.error(StatusCode::kInvalidArgument, "length is not a number");
  if (n <= 0) return int64_t{0};
  if (n > static_cast<double>(kMaxRangeLength))
    return node.error(StatusCode::kInvalidArgument, "length " + std::to_string(n) + " is too large");
  return static_cast<int64_t>(n);
}

// Scalar value of a one-element host tensor, as T.
template <typename T>
T scalar_of(const void* data) {
  return *static_cast<const T*>(data);
}

}  // namespace

Result<int64_t> range_length(const ir::Node& node, DataType t, const void* s, const void* l, const void* d) {
  switch (t) {
    case DataType::kFloat32: return float_length(node, scalar_of<float>(s), scalar_of<float>(l), scalar_of<float>(d));
    case DataType::kInt32:
      return int_length(node, scalar_of<int32_t>(s), scalar_of<int32_t>(l), scalar_of<int32_t>(d));
    case DataType::kInt64:
      return int_length(node, scalar_of<int64_t>(s), scalar_of<int64_t>(l), scalar_of<int64_t>(d));
    default: return node.error(StatusCode::kUnsupported, std::string("data type ") + dtype_name(t));
  }
}

namespace {

const char* const kNames[] = {"start", "limit", "delta"};

Status infer(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.has_input(i)) return ctx.error(std::string("missing input ") + kNames[i]);
  const DataType t = ctx.input_dtype(0);
  if (!range_type(t)) return ctx.unsupported(std::string("data type ") + dtype_name(t) + " is not supported");
  bool all_known = true;
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input_dtype(i) != t)
      return ctx.error(std::string(kNames[i]) + " has type " + dtype_name(ctx.input_dtype(i)) + ", start has " +
                       dtype_name(t));
    const TensorInfo& in = ctx.input(i);
    // A scalar; a one-element 1-D tensor is accepted too (some exporters emit [1]).
    if (in.has_shape && (in.dims.size() > 1 || (in.dims.size() == 1 && in.dims[0] >= 0 && in.dims[0] != 1)))
      return ctx.error(std::string(kNames[i]) + " must be a scalar, got shape " + dims_to_string(in.dims));
    if (!ctx.input_value(i)) all_known = false;
    else if (ctx.input_value(i)->numel() != 1)
      return ctx.error(std::string(kNames[i]) + " must hold one value");
  }
  if (!all_known) {
    ctx.set_output(0, t, {kDynamicDim});
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(int64_t n, range_length(ctx.node(), t, ctx.input_value(0)->data(), ctx.input_value(1)->data(),
                                            ctx.input_value(2)->data()));
  ctx.set_output(0, t, {n});
  return ok_status();
}

template <typename T>
void fill(T* out, int64_t n, T start, T delta) {
  if constexpr (std::is_integral_v<T>) {
    // Modular arithmetic: every produced value lies in [start, limit) so the result is exact.
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<T>(static_cast<int64_t>(uint64_t(int64_t(start)) + uint64_t(i) * uint64_t(int64_t(delta))));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = start + static_cast<T>(i) * delta;
  }
}

Status cpu(KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.has_input(i) || ctx.input(i).numel() != 1 || ctx.input(i).dtype != ctx.input(0).dtype)
      return ctx.error(std::string(kNames[i]) + " must be a scalar of start's type");
  const DataType t = ctx.input(0).dtype;
  const void* s = ctx.input(0).data;
  const void* d = ctx.input(2).data;
  SRT_ASSIGN_OR_RETURN(int64_t n, range_length(ctx.node(), t, s, ctx.input(1).data, d));
  const TensorRef& y = ctx.output(0);
  if (y.dims != Dims{n})
    return ctx.error("output shape " + dims_to_string(y.dims) + " differs from the range length " + std::to_string(n));
  switch (t) {
    case DataType::kFloat32: fill(y.as<float>(), n, scalar_of<float>(s), scalar_of<float>(d)); break;
    case DataType::kInt32: fill(y.as<int32_t>(), n, scalar_of<int32_t>(s), scalar_of<int32_t>(d)); break;
    case DataType::kInt64: fill(y.as<int64_t>(), n, scalar_of<int64_t>(s), scalar_of<int64_t>(d)); break;
    default: return ctx.unsupported(std::string("data type ") + dtype_name(t));
  }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Range, {.op_type = "Range", .min_opset = 11, .infer = infer, .cpu = cpu,
                             .shape_inputs = {0, 1, 2},
                             .cpu_dtypes = dtype_mask({DataType::kFloat32, DataType::kInt32, DataType::kInt64})});

}  // namespace streamrt::ops
