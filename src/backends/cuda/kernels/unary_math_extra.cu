// More unary element-wise math on CUDA: Acos, Asin, Atan, Tan, Acosh, Asinh, Atanh, Cosh,
// Sinh, Round (halves to even: rintf in the default rounding mode), Sign (every numeric type).
// Mirrors src/ops/unary_math_extra.cc: float types compute in float (no fast-math).
#include "backends/cuda/kernels/unary.cuh"

namespace streamrt::cuda {
namespace {

using ops::kFloats;
using ops::kNumeric;

struct Acos { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return acosf(x); } };
struct Asin { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return asinf(x); } };
struct Atan { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return atanf(x); } };
struct Tan { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return tanf(x); } };
struct Acosh { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return acoshf(x); } };
struct Asinh { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return asinhf(x); } };
struct Atanh { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return atanhf(x); } };
struct Cosh { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return coshf(x); } };
struct Sinh { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return sinhf(x); } };
struct Round { static constexpr unsigned kTypes = kFloats; __device__ float operator()(float x) const { return rintf(x); } };
struct Sign {
  static constexpr unsigned kTypes = kNumeric;
  // Same expression as the CPU: zero and NaN fall through unchanged.
  template <typename C> __device__ C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x > 0 ? C(1) : C(0);
    else return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);
  }
};

}  // namespace

SRT_CUDA_UNARY(Acos);
SRT_CUDA_UNARY(Asin);
SRT_CUDA_UNARY(Atan);
SRT_CUDA_UNARY(Tan);
SRT_CUDA_UNARY(Acosh);
SRT_CUDA_UNARY(Asinh);
SRT_CUDA_UNARY(Atanh);
SRT_CUDA_UNARY(Cosh);
SRT_CUDA_UNARY(Sinh);
SRT_CUDA_UNARY(Round);
SRT_CUDA_UNARY(Sign);

}  // namespace streamrt::cuda
