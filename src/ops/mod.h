// Mod's scalar rule, shared by the CPU kernel (mod.cc) and the CUDA kernel
// (backends/cuda/kernels/mod.cu) so both compute the same thing:
//   fmod = 0: the remainder takes the sign of the divisor (Python / numpy mod);
//   fmod = 1: the remainder takes the sign of the dividend (C fmod).
// Integer division by zero gives 0 (as numpy) instead of trapping, and x % -1 is 0 without
// evaluating INT_MIN % -1 (undefined in C++). Floats compute in float (half types too).
#pragma once

#include <math.h>

#include <type_traits>

#if defined(__CUDACC__)
#define SRT_MOD_HD __host__ __device__
#else
#define SRT_MOD_HD
#endif

namespace streamrt::ops {

template <typename C>
SRT_MOD_HD inline C mod_value(C a, C b, bool c_fmod) {
  if constexpr (std::is_floating_point_v<C>) {
    C r = fmod(a, b);  // the float overload (math.h brings std::fmod's into scope on the host)
    if (!c_fmod && r != C(0) && ((r < C(0)) != (b < C(0)))) r += b;
    return r;
  } else {
    if (b == C(0)) return C(0);
    if constexpr (std::is_signed_v<C>) {
      if (b == C(-1)) return C(0);
    }
    C r = static_cast<C>(a % b);
    if constexpr (std::is_signed_v<C>) {
      if (!c_fmod && r != C(0) && ((r < C(0)) != (b < C(0)))) r = static_cast<C>(r + b);
    }
    return r;
  }
}

}  // namespace streamrt::ops
