// Cast (attribute 'to' = ONNX TensorProto data type number) and CastLike (target dtype from
// input 1, opset 15). Any streamrt dtype to any other:
//   - float -> integer truncates toward zero like static_cast; NaN becomes 0 and values out of
//     the target's range saturate at its limits (static_cast would be undefined there);
//   - integer -> integer wraps modulo 2^bits (C++20 conversion rules);
//   - anything -> bool is value != 0 (NaN is true); bool -> anything is 0 / 1;
//   - float16 / bfloat16 convert through float (round to nearest even on the way back); from
//     float64 they round once, as numpy does (see narrow_for_half);
//   - float64 <-> integers go through double, never float.
// The 'saturate' attribute (opset 19) only concerns float8 types, and the float4 / float8 /
// int4 types of opsets 19-23 are refused with kUnsupported.
// Between int64 and int32, the known elements of a partly known shape vector carry over.
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/elementwise_util.h"
#include "ops/partial_ints.h"

namespace streamrt::ops {
namespace {

// ONNX TensorProto.DataType numbers.
Result<DataType> dtype_from_onnx(const ir::Node& node, int64_t onnx_type) {
  switch (onnx_type) {
    case 1: return DataType::kFloat32;
    case 2: return DataType::kUInt8;
    case 3: return DataType::kInt8;
    case 6: return DataType::kInt32;
    case 7: return DataType::kInt64;
    case 4: return DataType::kUInt16;
    case 5: return DataType::kInt16;
    case 9: return DataType::kBool;
    case 10: return DataType::kFloat16;
    case 11: return DataType::kFloat64;
    case 12: return DataType::kUInt32;
    case 13: return DataType::kUInt64;
    case 16: return DataType::kBFloat16;
    default: break;
  }
  static const char* const kNames[] = {
      "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
      "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128",
      "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",
      "INT4", "FLOAT4E2M1"};
  constexpr int64_t kCount = static_cast<int64_t>(std::size(kNames));
  if (onnx_type > 0 && onnx_type < kCount)
    return node.error(StatusCode::kUnsupported, std::string("cast to ONNX data type ") +
                                                    kNames[onnx_type] + " (" +
                                                    std::to_string(onnx_type) + ") is not supported");
  return node.error(StatusCode::kInvalidModel,
                    "attribute 'to' = " + std::to_string(onnx_type) + " is not an ONNX data type");
}

// double -> float rounding to odd: a float whose last bit records that bits were dropped.
// Rounding that to float16 / bfloat16 (11 / 8 significant bits, at least 2 fewer than
// float's 24) then gives the same result as rounding the double directly, with no double
// rounding error at ties.
float narrow_for_half(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) --bits;  // truncate toward zero
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

// One element: `From` is the source storage type (uint8_t stands in for bool, see below).
template <typename To, typename From>
To convert(From raw) {
  const auto v = load(raw);  // float for half types
  using V = std::remove_const_t<decltype(v)>;
  if constexpr (std::is_same_v<To, bool>) return v != 0;
  else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<V, double>) return To(narrow_for_half(v));
    else return To(static_cast<float>(v));
  }
  else if constexpr (std::is_floating_point_v<To>) return static_cast<To>(v);
  else if constexpr (std::is_floating_point_v<V>) return saturate_cast<To>(static_cast<double>(v));
  else return static_cast<To>(v);
}

template <typename From, typename To>
void cast_loop(const TensorRef& x, const TensorRef& y) {
  To* py = y.as<To>();
  const int64_t n = x.numel();
  if constexpr (std::is_same_v<From, bool>) {
    // Bool bytes are normalized to 0 / 1 first; a stray byte value is never loaded as bool.
    const uint8_t* px = bool_bytes(x);
    for (int64_t i = 0; i < n; ++i) py[i] = convert<To>(static_cast<uint8_t>(px[i] != 0));
  } else {
    const From* px = x.as<From>();
    for (int64_t i = 0; i < n; ++i) py[i] = convert<To>(px[i]);
  }
}

// Converts input 0 into output 0's dtype.
Status cast_cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_same_numel(ctx, 0, 0));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  if (x.dtype == y.dtype && x.dtype != DataType::kBool) {
    if (x.data != y.data) std::memmove(y.data, x.data, x.nbytes());
    return ok_status();
  }
  const std::string what = ctx.node().describe();
  return dispatch<kAll>(x.dtype, what, [&]<typename From>() {
    return dispatch<kAll>(y.dtype, what, [&]<typename To>() {
      cast_loop<From, To>(x, y);
      return ok_status();
    });
  });
}

Status cast_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  SRT_ASSIGN_OR_RETURN(int64_t to, ctx.node().attr_int("to"));
  SRT_ASSIGN_OR_RETURN(DataType out, dtype_from_onnx(ctx.node(), to));
  ctx.set_output_like(0, out, 0);
  forward_partial(ctx, out);  // int64 <-> int32 shape vectors keep their known elements
  return ok_status();
}

Status cast_like_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kAll));
  ctx.set_output_like(0, ctx.input_dtype(1), 0);
  forward_partial(ctx, ctx.input_dtype(1));
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Cast, {.op_type = "Cast", .min_opset = 6, .infer = cast_infer, .cpu = cast_cpu,
                            .cpu_dtypes = kAnyDType, .output_dtype_attr = "to"});
STREAMRT_REGISTER_OP(CastLike, {.op_type = "CastLike", .min_opset = 15, .infer = cast_like_infer,
                                .cpu = cast_cpu, .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
