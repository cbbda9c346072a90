// CPU GEMM pieces for half-type operands (float16 / bfloat16), which BLAS cannot multiply:
//  - widen(): half -> float for a whole array, 8 lanes at a time where the CPU has AVX2 + F16C
//    (exact, as Half / BFloat16's scalar conversion: every half value is a float);
//  - half_b_gemm_rows(): C = A * op(B) for a float A of few rows and a half B read as stored,
//    widened in registers, B's columns shared among the cores. A decode step's MatMul (a row of
//    activations against a weight) reads the weight once;
//  - half_b_sgemm(): the same through BLAS for more rows, B widened a panel at a time.
// Both replace widening all of B into a fresh float copy per call, which took 70-80 ms for a
// 4096 x 4096 float16 weight on a 2-core VM whatever the rows (1 row now: ~1.2 ms).
#pragma once

#include <cstdint>

#include "core/float16.h"
#include "streamrt/status.h"

namespace streamrt::ops {

// Whether the functions below (and WeightOnlyMatMul's decode loops) may use the CPU's vector units (the default, where the CPU has
// AVX2 + FMA + F16C); false takes the portable loops, to test them or rule the vector code out
// (STREAMRT_NO_SIMD=1 in the CLI and the test binary). Process-wide: the choice is neither the
// plan's (a plan is the same either way, so not BuilderConfig) nor a runtime's (CPU kernels get
// no per-runtime state, and the loops are shared by every engine in the process).
void set_cpu_simd(bool enable);
// set_cpu_simd's current choice (other kernels with vector copies follow it too).
bool cpu_simd_allowed();

// dst[i] = float(src[i]) for i < n.
void widen(const Half* src, float* dst, int64_t n);
void widen(const BFloat16* src, float* dst, int64_t n);

// Rows of A up to which half_b_gemm_rows() is the better choice; past it, half_b_sgemm() (BLAS's
// blocked kernels) wins: at 16 / 17 rows of a 4096 x 4096 weight the two take about the same.
inline constexpr int64_t kHalfGemmMaxRows = 16;

// Row-major C[m x n] = A[m x k] * op(B), op(B) = B (k x n, row stride ldb) or, with trans_b, B^T
// (B stored n x k). A's rows are lda apart, C's ldc; C is overwritten. Any m works; it is meant
// for m <= kHalfGemmMaxRows.
template <typename T>
void half_b_gemm_rows(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const T* b,
                      int64_t ldb, float* c, int64_t ldc);

// Row-major C = alpha * op(A) * op(B) + beta * C with BLAS (sgemm's contract) for a half-type B,
// widened a panel of op(B)'s rows at a time into a buffer that each thread keeps: never a float
// copy of all of B. For more rows than half_b_gemm_rows() is meant for.
template <typename T>
Status half_b_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    int64_t lda, const T* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace streamrt::ops
