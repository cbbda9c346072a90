// BitShift's attribute and scalar rule, shared by the CPU kernel (bitshift.cc) and the CUDA
// kernel (backends/cuda/kernels/bitshift.cu).
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/op.h"

#if defined(__CUDACC__)
#define SRT_BITSHIFT_HD __host__ __device__
#else
#define SRT_BITSHIFT_HD
#endif

namespace streamrt::ops {

// Attribute 'direction': true for "LEFT", false for "RIGHT"; anything else is kInvalidModel.
Result<bool> bitshift_left(const ir::Node& node);

// x << s or x >> s in U's width; a shift of U's bit count or more gives 0 (as numpy).
template <typename U>
SRT_BITSHIFT_HD inline U bitshift_value(U x, U s, bool left) {
  static_assert(std::is_unsigned_v<U>, "BitShift is defined on unsigned types");
  if (s >= sizeof(U) * 8) return U(0);
  return static_cast<U>(left ? x << s : x >> s);
}

}  // namespace streamrt::ops
