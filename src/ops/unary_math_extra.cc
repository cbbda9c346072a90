// More unary element-wise math: Acos, Asin, Atan, Tan (opset 7), Acosh, Asinh, Atanh, Cosh,
// Sinh (opset 9), Round (opset 11; halves to even, as numpy and the ONNX reference), Sign
// (opset 9; every numeric type: -1 / 0 / 1, NaN stays NaN). Float types compute in float, as
// in unary_math.cc; the CUDA twin is backends/cuda/kernels/unary_math_extra.cu.
#include <cmath>

#include "ops/unary_op.h"

namespace streamrt::ops {
namespace {

struct Acos { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::acos(x); } };
struct Asin { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::asin(x); } };
struct Atan { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::atan(x); } };
struct Tan { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::tan(x); } };
struct Acosh { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::acosh(x); } };
struct Asinh { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::asinh(x); } };
struct Atanh { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::atanh(x); } };
struct Cosh { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::cosh(x); } };
struct Sinh { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::sinh(x); } };
struct Round {
  static constexpr unsigned kTypes = kFloats;
  // nearbyint in the default rounding mode (to nearest, ties to even): 2.5 -> 2, -1.5 -> -2.
  static float f(float x) { return std::nearbyint(x); }
};
struct Sign {
  static constexpr unsigned kTypes = kNumeric;
  // Zero (of either sign) and NaN fall through unchanged.
  template <typename C> static C f(C x) {
    if constexpr (std::is_unsigned_v<C>) return x > 0 ? C(1) : C(0);
    else return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);
  }
};

}  // namespace

#define SRT_UNARY(Name, since)                                                                   \
  STREAMRT_REGISTER_OP(Name, {.op_type = #Name, .min_opset = since, .infer = unary_op_infer<Name>, \
                              .cpu = unary_op_cpu<Name>, .cpu_dtypes = dtypes(Name::kTypes)})

SRT_UNARY(Acos, 7);
SRT_UNARY(Asin, 7);
SRT_UNARY(Atan, 7);
SRT_UNARY(Tan, 7);
SRT_UNARY(Acosh, 9);
SRT_UNARY(Asinh, 9);
SRT_UNARY(Atanh, 9);
SRT_UNARY(Cosh, 9);
SRT_UNARY(Sinh, 9);
SRT_UNARY(Round, 11);
SRT_UNARY(Sign, 9);

#undef SRT_UNARY

}  // namespace streamrt::ops
