#include "ops/half_gemm.h"

#include <algorithm>
#include <cstring>

#include "core/env.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SRT_HAVE_X86 1
#define SRT_AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define SRT_HAVE_X86 0
#endif

namespace streamrt::ops {
namespace {

// STREAMRT_NO_SIMD=1 takes the portable loops (for tests and to rule the vector code out).
bool use_simd() {
#if SRT_HAVE_X86
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c") && !env_flag("STREAMRT_NO_SIMD");
  return yes;
#else
  return false;
#endif
}

// ---- portable loops ------------------------------------------------------------------------

template <typename T>
void widen_scalar(const T* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

template <typename T>
void rows_scalar(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const T* b, int64_t ldb,
                 float* c, int64_t ldc) {
  for (int64_t r = 0; r < m; ++r) {
    float* cr = c + r * ldc;
    std::fill(cr, cr + n, 0.f);
    for (int64_t p = 0; p < k; ++p) {
      const float av = a[r * lda + p];
      if (trans_b)
        for (int64_t j = 0; j < n; ++j) cr[j] += av * static_cast<float>(b[j * ldb + p]);
      else
        for (int64_t j = 0; j < n; ++j) cr[j] += av * static_cast<float>(b[p * ldb + j]);
    }
  }
}

#if SRT_HAVE_X86
// ---- AVX2 + F16C -----------------------------------------------------------------------------

SRT_AVX2 inline __m256 load8(const Half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
SRT_AVX2 inline __m256 load8(const BFloat16* p) {  // bfloat16 is a float's upper half
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

template <typename T>
SRT_AVX2 void widen_avx2(const T* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(src + i));
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// R rows of C = A * B, B stored k x n: B's rows stream through once, each widened 8 lanes at a
// time and added into R rows of float accumulators that stay in L1 (a block of columns at a time).
template <typename T, int R>
SRT_AVX2 void rows_nt_avx2(int64_t n, int64_t k, const float* a, int64_t lda, const T* b, int64_t ldb, float* c,
                           int64_t ldc) {
  constexpr int64_t kCols = 8192 / R;  // R x kCols floats = 32 KiB
  alignas(32) float acc[R][kCols];
  for (int64_t j0 = 0; j0 < n; j0 += kCols) {
    const int64_t nb = std::min(kCols, n - j0), nv = nb / 8 * 8;
    for (int r = 0; r < R; ++r) std::fill(acc[r], acc[r] + nb, 0.f);
    for (int64_t p = 0; p < k; ++p) {
      const T* brow = b + p * ldb + j0;
      __m256 av[R];
      for (int r = 0; r < R; ++r) av[r] = _mm256_set1_ps(a[r * lda + p]);
      for (int64_t j = 0; j < nv; j += 8) {
        const __m256 bv = load8(brow + j);
        for (int r = 0; r < R; ++r)
          _mm256_store_ps(acc[r] + j, _mm256_fmadd_ps(av[r], bv, _mm256_load_ps(acc[r] + j)));
      }
      for (int64_t j = nv; j < nb; ++j) {
        const float bj = static_cast<float>(brow[j]);
        for (int r = 0; r < R; ++r) acc[r][j] += a[r * lda + p] * bj;
      }
    }
    for (int r = 0; r < R; ++r) std::memcpy(c + r * ldc + j0, acc[r], static_cast<size_t>(nb) * sizeof(float));
  }
}

SRT_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// R rows of C = A * B^T, B stored n x k: a dot product of each A row with each B row, U
// independent accumulators per row to hide the FMA latency.
template <typename T, int R>
SRT_AVX2 void rows_t_avx2(int64_t n, int64_t k, const float* a, int64_t lda, const T* b, int64_t ldb, float* c,
                          int64_t ldc) {
  constexpr int U = R >= 4 ? 2 : 4;
  const int64_t ku = k / (8 * U) * (8 * U);
  for (int64_t j = 0; j < n; ++j) {
    const T* brow = b + j * ldb;
    __m256 acc[R][U];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < U; ++u) acc[r][u] = _mm256_setzero_ps();
    for (int64_t p = 0; p < ku; p += 8 * U)
      for (int u = 0; u < U; ++u) {
        const __m256 bv = load8(brow + p + 8 * u);
        for (int r = 0; r < R; ++r)
          acc[r][u] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + p + 8 * u), bv, acc[r][u]);
      }
    for (int r = 0; r < R; ++r) {
      __m256 t = acc[r][0];
      for (int u = 1; u < U; ++u) t = _mm256_add_ps(t, acc[r][u]);
      float s = hsum(t);
      for (int64_t p = ku; p < k; ++p) s += a[r * lda + p] * static_cast<float>(brow[p]);
      c[r * ldc + j] = s;
    }
  }
}

template <typename T>
void rows_avx2(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const T* b, int64_t ldb,
               float* c, int64_t ldc) {
  for (int64_t r = 0; r < m;) {
    const int64_t left = m - r;
    const float* ar = a + r * lda;
    float* cr = c + r * ldc;
    int step;
    if (trans_b) {
      step = left >= 4 ? 4 : left >= 2 ? 2 : 1;
      if (step == 4) rows_t_avx2<T, 4>(n, k, ar, lda, b, ldb, cr, ldc);
      else if (step == 2) rows_t_avx2<T, 2>(n, k, ar, lda, b, ldb, cr, ldc);
      else rows_t_avx2<T, 1>(n, k, ar, lda, b, ldb, cr, ldc);
    } else {
      step = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      if (step == 8) rows_nt_avx2<T, 8>(n, k, ar, lda, b, ldb, cr, ldc);
      else if (step == 4) rows_nt_avx2<T, 4>(n, k, ar, lda, b, ldb, cr, ldc);
      else if (step == 2) rows_nt_avx2<T, 2>(n, k, ar, lda, b, ldb, cr, ldc);
      else rows_nt_avx2<T, 1>(n, k, ar, lda, b, ldb, cr, ldc);
    }
    r += step;
  }
}
#endif  // SRT_HAVE_X86

template <typename T>
void widen_any(const T* src, float* dst, int64_t n) {
#if SRT_HAVE_X86
  if (use_simd()) return widen_avx2(src, dst, n);
#endif
  widen_scalar(src, dst, n);
}

}  // namespace

void widen(const Half* src, float* dst, int64_t n) { widen_any(src, dst, n); }
void widen(const BFloat16* src, float* dst, int64_t n) { widen_any(src, dst, n); }

template <typename T>
void half_b_gemm_rows(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const T* b,
                      int64_t ldb, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
#if SRT_HAVE_X86
  if (use_simd()) return rows_avx2(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
#endif
  rows_scalar(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
}

template void half_b_gemm_rows<Half>(bool, int64_t, int64_t, int64_t, const float*, int64_t, const Half*, int64_t,
                                     float*, int64_t);
template void half_b_gemm_rows<BFloat16>(bool, int64_t, int64_t, int64_t, const float*, int64_t, const BFloat16*,
                                         int64_t, float*, int64_t);

}  // namespace streamrt::ops
