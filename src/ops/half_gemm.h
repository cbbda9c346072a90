// CPU GEMM pieces for half-type operands (float16 / bfloat16), which BLAS cannot multiply:
//  - widen(): half -> float for a whole array, 8 lanes at a time where the CPU has AVX2 + F16C
//    (exact, as Half / BFloat16's scalar conversion: every half value is a float);
//  - half_b_gemm_rows(): C = A * op(B) for a float A of few rows and a half B read as stored,
//    widened in registers. A decode step's MatMul (one row of activations against a weight
//    matrix) reads the weight once instead of widening all of it into a float copy first, then
//    multiplying: on a 2-core VM, 1 x 4096 by 4096 x 4096 float16 took 72 ms that way.
#pragma once

#include <cstdint>

#include "core/float16.h"

namespace streamrt::ops {

// dst[i] = float(src[i]) for i < n.
void widen(const Half* src, float* dst, int64_t n);
void widen(const BFloat16* src, float* dst, int64_t n);

// Rows of A up to which half_b_gemm_rows() is the better choice; past it, widening B once and
// calling sgemm (blocked, multi-threaded) wins.
inline constexpr int64_t kHalfGemmMaxRows = 16;

// Row-major C[m x n] = A[m x k] * op(B), op(B) = B (k x n, row stride ldb) or, with trans_b, B^T
// (B stored n x k). A's rows are lda apart, C's ldc; C is overwritten. Any m works; it is meant
// for m <= kHalfGemmMaxRows.
template <typename T>
void half_b_gemm_rows(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const T* b,
                      int64_t ldb, float* c, int64_t ldc);

}  // namespace streamrt::ops
