#include "ops/half_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/parallel.h"
#include "ops/gemm_util.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SRT_HAVE_X86 1
#define SRT_AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define SRT_HAVE_X86 0
#endif

namespace streamrt::ops {
namespace {

std::atomic<bool> simd_allowed{true};  // set_cpu_simd

bool use_simd() {
#if SRT_HAVE_X86
  const CpuFeatures& cpu = cpu_features();
  static const bool has = cpu.avx2 && cpu.fma && cpu.f16c;
  return has && simd_allowed.load(std::memory_order_relaxed);
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

// R rows x 8U columns of C (a register tile) from `kb` rows of B: each B row's 8U values are
// widened once and used by all R rows; the sums stay in registers until the tile is stored (or
// added to C, after the first block of B's rows).
template <typename T, int R, int U>
SRT_AVX2 inline void tile_nt(int64_t kb, const float* a, int64_t lda, const T* b, int64_t ldb, float* c, int64_t ldc,
                             bool first) {
  __m256 acc[R][U];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < U; ++u) acc[r][u] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kb; ++p) {
    __m256 bv[U];
    for (int u = 0; u < U; ++u) bv[u] = load8(b + p * ldb + 8 * u);
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
      for (int u = 0; u < U; ++u) acc[r][u] = _mm256_fmadd_ps(av, bv[u], acc[r][u]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < U; ++u) {
      float* cp = c + r * ldc + 8 * u;
      _mm256_storeu_ps(cp, first ? acc[r][u] : _mm256_add_ps(_mm256_loadu_ps(cp), acc[r][u]));
    }
}

// All m rows of C = A * B, B stored k x n, over the columns [j_begin, j_end): blocks of 16 rows
// of B (16 sequential streams, which the prefetchers follow) are cut into tiles of 16 columns;
// every group of up to 4 rows of A takes its turn on a tile while it is in L1, so B comes in
// from memory once whatever m is.
template <typename T>
SRT_AVX2 void rows_nt_avx2(int64_t m, int64_t j_begin, int64_t j_end, int64_t k, const float* a, int64_t lda,
                           const T* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int U = 2;  // 4 rows x 2 accumulators + 2 values of B: within the 16 registers
  constexpr int64_t kTile = 8 * U, kRowBlock = 16;
  const int64_t jt = j_begin + (j_end - j_begin) / kTile * kTile;
  if (k == 0)
    for (int64_t r = 0; r < m; ++r) std::fill(c + r * ldc + j_begin, c + r * ldc + j_end, 0.f);
  for (int64_t p0 = 0; p0 < k; p0 += kRowBlock) {
    const int64_t kb = std::min(kRowBlock, k - p0);
    const bool first = p0 == 0;
    for (int64_t j0 = j_begin; j0 < jt; j0 += kTile) {
      const T* bt = b + p0 * ldb + j0;
      int64_t r = 0;
      for (; r + 4 <= m; r += 4) tile_nt<T, 4, U>(kb, a + r * lda + p0, lda, bt, ldb, c + r * ldc + j0, ldc, first);
      for (; r + 2 <= m; r += 2) tile_nt<T, 2, U>(kb, a + r * lda + p0, lda, bt, ldb, c + r * ldc + j0, ldc, first);
      for (; r < m; ++r) tile_nt<T, 1, U>(kb, a + r * lda + p0, lda, bt, ldb, c + r * ldc + j0, ldc, first);
    }
    for (int64_t j = jt; j < j_end; ++j)
      for (int64_t r = 0; r < m; ++r) {
        float s = first ? 0.f : c[r * ldc + j];
        for (int64_t p = p0; p < p0 + kb; ++p) s += a[r * lda + p] * static_cast<float>(b[p * ldb + j]);
        c[r * ldc + j] = s;
      }
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

// Columns [j_begin, j_end) of C.
template <typename T>
void rows_avx2(bool trans_b, int64_t m, int64_t j_begin, int64_t j_end, int64_t k, const float* a, int64_t lda,
               const T* b, int64_t ldb, float* c, int64_t ldc) {
  if (!trans_b) return rows_nt_avx2(m, j_begin, j_end, k, a, lda, b, ldb, c, ldc);
  const int64_t n = j_end - j_begin;
  const T* bj = b + j_begin * ldb;
  for (int64_t r = 0; r < m;) {
    const int64_t left = m - r;
    const float* ar = a + r * lda;
    float* cr = c + r * ldc + j_begin;
    const int step = left >= 4 ? 4 : left >= 2 ? 2 : 1;
    if (step == 4) rows_t_avx2<T, 4>(n, k, ar, lda, bj, ldb, cr, ldc);
    else if (step == 2) rows_t_avx2<T, 2>(n, k, ar, lda, bj, ldb, cr, ldc);
    else rows_t_avx2<T, 1>(n, k, ar, lda, bj, ldb, cr, ldc);
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

void set_cpu_simd(bool enable) { simd_allowed.store(enable, std::memory_order_relaxed); }
bool cpu_simd_allowed() { return simd_allowed.load(std::memory_order_relaxed); }

void widen(const Half* src, float* dst, int64_t n) { widen_any(src, dst, n); }
void widen(const BFloat16* src, float* dst, int64_t n) { widen_any(src, dst, n); }

template <typename T>
void half_b_gemm_rows(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const T* b,
                      int64_t ldb, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
#if SRT_HAVE_X86
  if (use_simd()) {
    // A weight of a million elements or more is read by several threads, each its share of the
    // columns (a thread costs ~40 us to start; reading 2 MB from memory takes ~200).
    const int64_t threads = n * k >= (int64_t{1} << 20) ? std::min<int64_t>({hardware_threads(), n / 64, 8}) : 1;
    if (threads <= 1) return rows_avx2(trans_b, m, 0, n, k, a, lda, b, ldb, c, ldc);
    run_in_shares(n, threads, 16, [&](int64_t c0, int64_t c1) {  // whole 16-column tiles
      rows_avx2(trans_b, m, c0, c1, k, a, lda, b, ldb, c, ldc);
    });
    return;
  }
#endif
  rows_scalar(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
}

template <typename T>
Status half_b_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    int64_t lda, const T* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0 || k == 0) return sgemm(trans_a, trans_b, m, n, 0, alpha, a, lda, nullptr, 1, beta, c, ldc);
  // Panels of op(B)'s rows, about 8 MB of floats each, in one buffer per thread that stays
  // allocated (a fresh one per call spent more on page faults than BLAS on the product).
  const int64_t kc = std::clamp<int64_t>((int64_t{2} << 20) / n / 16 * 16, 16, 1024);
  thread_local std::vector<float> panel;
  if (panel.size() < static_cast<size_t>(std::min(kc, k) * n)) panel.resize(static_cast<size_t>(std::min(kc, k) * n));
  for (int64_t p0 = 0; p0 < k; p0 += kc) {
    const int64_t kb = std::min(kc, k - p0);
    if (!trans_b)
      for (int64_t p = 0; p < kb; ++p) widen(b + (p0 + p) * ldb, panel.data() + p * n, n);
    else
      for (int64_t j = 0; j < n; ++j) widen(b + j * ldb + p0, panel.data() + j * kb, kb);
    const float* ap = trans_a ? a + p0 * lda : a + p0;
    SRT_RETURN_IF_ERROR(sgemm(trans_a, trans_b, m, n, kb, alpha, ap, lda, panel.data(), trans_b ? kb : n,
                              p0 == 0 ? beta : 1.f, c, ldc));
  }
  return ok_status();
}

template Status half_b_sgemm<Half>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const Half*,
                                   int64_t, float, float*, int64_t);
template Status half_b_sgemm<BFloat16>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                       const BFloat16*, int64_t, float, float*, int64_t);

template void half_b_gemm_rows<Half>(bool, int64_t, int64_t, int64_t, const float*, int64_t, const Half*, int64_t,
                                     float*, int64_t);
template void half_b_gemm_rows<BFloat16>(bool, int64_t, int64_t, int64_t, const float*, int64_t, const BFloat16*,
                                         int64_t, float*, int64_t);

}  // namespace streamrt::ops
