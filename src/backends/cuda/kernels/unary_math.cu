// Unary element-wise math on CUDA: Sigmoid, Tanh, Erf, Sqrt, Reciprocal, Exp, Log, Neg, Abs,
// Floor, Ceil, Sin, Cos, Softplus, Softsign. Mirrors src/ops/unary_math.cc: float types
// compute in float (CUDA's accurate float math, no fast-math); Neg also takes signed integers
// (wrapping at the most negative value) and Abs every numeric type.
#include "backends/cuda/kernels/unary.cuh"

namespace streamrt::cuda {
namespace {

using ops::kFloats;
using ops::kNumeric;
using ops::kSignedInts;

struct Sigmoid {
  static constexpr unsigned kTypes = kFloats;
  // Split on the sign so exp() never overflows into inf/inf.
  __device__ float operator()(float x) const {
    if (x >= 0) return 1.f / (1.f + expf(-x));
    float e = expf(x);
    return e / (1.f + e);
  }
};
struct Tanh { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return tanhf(x); } };
struct Erf { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return erff(x); } };
struct Sqrt { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return sqrtf(x); } };
struct Reciprocal { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return 1.f / x; } };
struct Exp { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return expf(x); } };
struct Log { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return logf(x); } };
struct Floor { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return floorf(x); } };
struct Ceil { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return ceilf(x); } };
struct Sin { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return sinf(x); } };
struct Cos { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return cosf(x); } };
struct Softplus {
  static constexpr unsigned kTypes = kFloats;
  // log(1 + e^x) without overflow for large x: x + log1p(e^-x).
  __device__ float operator()(float x) const { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
};
struct Softsign {
  static constexpr unsigned kTypes = kFloats;
  __device__ float operator()(float x) const { return x / (1.f + fabsf(x)); }
};
struct Neg {
  static constexpr unsigned kTypes = kFloats | kSignedInts;
  template <typename C> __device__ C operator()(C x) const { return wrapping_neg(x); }
};
struct Abs {
  static constexpr unsigned kTypes = kNumeric;
  // Same expression as the CPU (so Abs(-0.0) is -0.0 there and here).
  template <typename C> __device__ C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    else return x < 0 ? wrapping_neg(x) : x;
  }
};

}  // namespace

SRT_CUDA_UNARY(Sigmoid);
SRT_CUDA_UNARY(Tanh);
SRT_CUDA_UNARY(Erf);
SRT_CUDA_UNARY(Sqrt);
SRT_CUDA_UNARY(Reciprocal);
SRT_CUDA_UNARY(Exp);
SRT_CUDA_UNARY(Log);
SRT_CUDA_UNARY(Neg);
SRT_CUDA_UNARY(Abs);
SRT_CUDA_UNARY(Floor);
SRT_CUDA_UNARY(Ceil);
SRT_CUDA_UNARY(Sin);
SRT_CUDA_UNARY(Cos);
SRT_CUDA_UNARY(Softplus);
SRT_CUDA_UNARY(Softsign);

}  // namespace streamrt::cuda
