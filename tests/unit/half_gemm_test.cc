// The CPU's half-type GEMM pieces (ops/half_gemm.h): widening is exact for every bit pattern, and
// the few-rows kernel matches a double-precision reference for both layouts of B, odd sizes, the
// column-block edges and strided operands. ctest runs this file twice: as is (AVX2 + F16C where
// the CPU has them) and with STREAMRT_NO_SIMD=1 (the portable loops: the library reads no
// environment, the test binary applies the variable with set_cpu_simd; tests/test_environment.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/environment.h"
#include "ops/half_gemm.h"

namespace streamrt::ops {
namespace {

template <typename T>
void expect_widen_exact() {
  std::vector<T> src(65536 + 5);
  for (size_t i = 0; i < src.size(); ++i) src[i].bits = static_cast<uint16_t>(i * 40503u);  // every pattern
  for (size_t i = 0; i < 65536; ++i) src[i].bits = static_cast<uint16_t>(i);
  std::vector<float> got(src.size());
  widen(src.data(), got.data(), static_cast<int64_t>(src.size()));
  for (size_t i = 0; i < src.size(); ++i) {
    const float want = static_cast<float>(src[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << "bits " << src[i].bits;  // the vector unit may quiet a NaN
    } else {
      ASSERT_EQ(std::memcmp(&got[i], &want, 4), 0) << "bits " << src[i].bits << ": " << got[i] << " vs " << want;
    }
  }
}

TEST(HalfGemm, WidenIsExactForEveryBitPattern) {
  expect_widen_exact<Half>();
  expect_widen_exact<BFloat16>();
}

// set_cpu_simd(false) takes the portable loops, which are exact too (in either run of this file).
TEST(HalfGemm, WidenIsExactWithoutSimd) {
  set_cpu_simd(false);
  expect_widen_exact<Half>();
  expect_widen_exact<BFloat16>();
  set_cpu_simd(!env_switch(std::getenv, "STREAMRT_NO_SIMD"));  // as the binary started
}

template <typename T>
void expect_rows_match(bool trans_b, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE((trans_b ? "B^T m " : "B m ") + std::to_string(m) + " n " + std::to_string(n) + " k " +
               std::to_string(k));
  // Strided: each operand's rows are 3 elements longer than they hold.
  const int64_t lda = k + 3, ldb = (trans_b ? k : n) + 3, ldc = n + 3;
  std::mt19937 rng(static_cast<uint32_t>(m * 131 + n * 7 + k));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> a(static_cast<size_t>(m * lda));
  for (float& x : a) x = u(rng);
  std::vector<T> b(static_cast<size_t>((trans_b ? n : k) * ldb));
  for (T& x : b) x = T(u(rng));
  std::vector<float> c(static_cast<size_t>(m * ldc), 42.f);
  half_b_gemm_rows(trans_b, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, scale = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double bv = static_cast<float>(trans_b ? b[j * ldb + p] : b[p * ldb + j]);
        want += a[r * lda + p] * bv;
        scale += std::fabs(a[r * lda + p] * bv);
      }
      ASSERT_NEAR(c[r * ldc + j], want, 1e-6 * scale + 1e-7) << "row " << r << " col " << j;
    }
    for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[r * ldc + j], 42.f) << "wrote past row " << r;
  }
}

TEST(HalfGemm, FewRowsMatchAReferenceForBothLayouts) {
  for (bool tb : {false, true})
    for (int64_t m : {1, 2, 3, 5, 8, 11, 16})
      for (int64_t n : {1, 7, 8, 33})
        for (int64_t k : {1, 9, 64, 67}) {
          expect_rows_match<Half>(tb, m, n, k);
          expect_rows_match<BFloat16>(tb, m, n, k);
        }
}

// Large enough to be split across threads (a million elements of B), with column counts that
// leave partial tiles in a thread's share, and k past the kernel's blocks of 16 rows of B.
TEST(HalfGemm, ThreadSharesAndBlockEdges) {
  for (int64_t m : {1, 5})
    for (int64_t n : {1023, 1040}) expect_rows_match<Half>(false, m, n, 1025);
  expect_rows_match<BFloat16>(true, 3, 1030, 1100);
  expect_rows_match<Half>(false, 2, 8, 17);
}

// The BLAS path: A (either layout) times B (either layout) in panels of B's rows, with alpha and
// beta, k over several panels (a panel is about 2M floats of op(B): 512 rows at n = 4096).
TEST(HalfGemm, PanelsThroughBlasMatchAReference) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t m = 17, n = 4096, k = 1100;
      SCOPED_TRACE(std::string(ta ? "A^T" : "A") + (tb ? " B^T" : " B"));
      std::mt19937 rng(5);
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      std::vector<float> a(static_cast<size_t>(m * k)), c(static_cast<size_t>(m * n));
      std::vector<Half> b(static_cast<size_t>(k * n));
      for (float& x : a) x = u(rng);
      for (Half& x : b) x = Half(u(rng));
      for (float& x : c) x = u(rng);
      const std::vector<float> c0 = c;
      const float alpha = 0.5f, beta = -2.f;
      ASSERT_TRUE(half_b_sgemm(ta, tb, m, n, k, alpha, a.data(), ta ? m : k, b.data(), tb ? k : n, beta, c.data(), n)
                      .ok());
      for (int64_t r = 0; r < m; r += 5)
        for (int64_t j = 0; j < n; j += 97) {
          double want = 0, scale = 0;
          for (int64_t p = 0; p < k; ++p) {
            const double x = (ta ? a[p * m + r] : a[r * k + p]) * static_cast<double>(static_cast<float>(tb ? b[j * k + p] : b[p * n + j]));
            want += x;
            scale += std::fabs(x);
          }
          want = alpha * want + beta * c0[r * n + j];
          ASSERT_NEAR(c[r * n + j], want, 1e-5 * (scale + 2)) << "row " << r << " col " << j;
        }
    }
}

TEST(HalfGemm, EmptyOperands) {
  std::vector<float> c(4, 42.f);
  const Half b[1] = {};
  half_b_gemm_rows<Half>(false, 0, 2, 2, nullptr, 2, b, 2, c.data(), 2);
  half_b_gemm_rows<Half>(false, 2, 0, 2, nullptr, 2, b, 2, c.data(), 2);
  EXPECT_EQ(c, std::vector<float>(4, 42.f));
  half_b_gemm_rows<Half>(false, 2, 2, 0, nullptr, 0, b, 2, c.data(), 2);  // k = 0: C = 0
  EXPECT_EQ(c, std::vector<float>(4, 0.f));
}

}  // namespace
}  // namespace streamrt::ops
