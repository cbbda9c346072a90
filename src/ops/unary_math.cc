// Unary element-wise math: Sigmoid, Tanh, Erf, Sqrt, Reciprocal, Exp, Log, Neg, Abs, Floor,
// Ceil, Sin, Cos, Softplus, Softsign. Float types compute in float; Neg also takes float64
// and signed integers, Abs float64 and all integers (ONNX allows them since opset 6).
#include <cmath>

#include "ops/fused_elementwise.h"
#include "ops/unary_op.h"

namespace streamrt::ops {
namespace {

// Each op is a struct with the dtypes it accepts and its scalar function. The kernel is a
// template over the struct so the function inlines into the loop.
struct Sigmoid {
  static constexpr unsigned kTypes = kFloats;
  // Split on the sign so exp() never overflows into inf/inf.
  static float f(float x) {
    if (x >= 0) return 1.f / (1.f + std::exp(-x));
    float e = std::exp(x);
    return e / (1.f + e);
  }
};
struct Tanh { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::tanh(x); } };
struct Erf { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::erf(x); } };
struct Sqrt { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::sqrt(x); } };
struct Reciprocal { static constexpr unsigned kTypes = kFloats; static float f(float x) { return 1.f / x; } };
struct Exp { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::exp(x); } };
struct Log { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::log(x); } };
struct Floor { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::floor(x); } };
struct Ceil { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::ceil(x); } };
struct Sin { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::sin(x); } };
struct Cos { static constexpr unsigned kTypes = kFloats; static float f(float x) { return std::cos(x); } };
struct Softplus {
  static constexpr unsigned kTypes = kFloats;
  // log(1 + e^x) without overflow for large x: x + log1p(e^-x).
  static float f(float x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
};
struct Softsign {
  static constexpr unsigned kTypes = kFloats;
  static float f(float x) { return x / (1.f + std::fabs(x)); }
};
struct Neg {
  static constexpr unsigned kTypes = kAllFloats | kSignedInts;
  template <typename C> static C f(C x) { return wrapping_neg(x); }
};
struct Abs {
  static constexpr unsigned kTypes = kNumeric;
  template <typename C> static C f(C x) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else return x < 0 ? wrapping_neg(x) : x;
  }
};

}  // namespace

// `fused`: the FusedElementwise opcode of the op, or -1 (ops/fused_elementwise.h).
#define SRT_UNARY(Name, since, fused)                                                   \
  STREAMRT_REGISTER_OP(Name, {.op_type = #Name, .min_opset = since, .infer = unary_op_infer<Name>, \
                              .cpu = unary_op_cpu<Name>, .cpu_dtypes = dtypes(Name::kTypes), .fused_opcode = fused})

SRT_UNARY(Sigmoid, 6, fused::kSigmoid);
SRT_UNARY(Tanh, 6, fused::kTanh);
SRT_UNARY(Erf, 9, fused::kErf);
SRT_UNARY(Sqrt, 6, fused::kSqrt);
SRT_UNARY(Reciprocal, 6, fused::kReciprocal);
SRT_UNARY(Exp, 6, fused::kExp);
SRT_UNARY(Log, 6, fused::kLog);
SRT_UNARY(Neg, 6, fused::kNeg);
SRT_UNARY(Abs, 6, fused::kAbs);
SRT_UNARY(Floor, 6, -1);
SRT_UNARY(Ceil, 6, -1);
SRT_UNARY(Sin, 7, -1);
SRT_UNARY(Cos, 7, -1);
SRT_UNARY(Softplus, 1, -1);
SRT_UNARY(Softsign, 1, -1);

#undef SRT_UNARY

}  // namespace streamrt::ops
