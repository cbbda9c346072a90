#include "ops/gemm_util.h"

#include <cblas.h>

#include <climits>

#include "core/parallel.h"

namespace streamrt::ops {
namespace {

// A GEMM is split among threads from this many multiply-adds per thread up (~2 ms of a core):
// below that a thread's start costs more than it saves.
constexpr int64_t kMacsPerThread = int64_t{1} << 23;
constexpr int64_t kRowAlign = 16, kColAlign = 64;

// streamrt splits CPU work among its own threads (core/parallel.h), GEMMs too. OpenBLAS's worker
// threads would otherwise busy-wait between its calls (about 0.1 s each time) on the cores those
// threads run on: BERT on 2 cores ran 20 % slower with both. Set when the library loads (OpenBLAS,
// a dependency, is initialized before it), so that every BLAS / LAPACK call streamrt makes, here or
// directly (Attention's scores, GPTQ's factorization), runs on its caller's thread. Process-wide: the
// system OpenBLAS that streamrt links runs single-threaded for the host application too
// (docs/design.md, "CPU threads").
[[maybe_unused]] const bool kSingleThreadedBlas = [] {
  openblas_set_num_threads(1);
  return true;
}();

}  // namespace

Status sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  if (m == 0 || n == 0) return ok_status();
  if (k == 0) {
    // BLAS leaves C untouched for k == 0 only when beta == 1; do the scaling by hand.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return ok_status();
  }
  for (int64_t v : {m, n, k, lda, ldb, ldc})
    if (v > INT_MAX)
      return unsupported("GEMM of " + std::to_string(m) + "x" + std::to_string(k) + " by " +
                         std::to_string(k) + "x" + std::to_string(n) +
                         " exceeds the 32-bit BLAS index range");
  auto part = [&](int64_t mm, int64_t nn, const float* pa, const float* pb, float* pc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(mm), static_cast<blasint>(nn), static_cast<blasint>(k), alpha, pa,
                static_cast<blasint>(lda), pb, static_cast<blasint>(ldb), beta, pc, static_cast<blasint>(ldc));
  };
  const int64_t threads = threads_for(m * n * k, kMacsPerThread);
  if (threads == 1) {
    part(m, n, a, b, c);
  } else if (m >= threads * kRowAlign) {  // rows of C (and of A) apiece; each thread packs B itself
    run_in_shares(m, threads, kRowAlign, [&](int64_t r0, int64_t r1) {
      part(r1 - r0, n, trans_a ? a + r0 : a + r0 * lda, b, c + r0 * ldc);
    });
  } else {  // few rows (decode): columns of C (and of B) apiece
    run_in_shares(n, threads, kColAlign, [&](int64_t c0, int64_t c1) {
      part(m, c1 - c0, a, trans_b ? b + c0 * ldb : b + c0, c + c0);
    });
  }
  return ok_status();
}

Status require_gemm_input(const InferContext& ctx, size_t i) {
  SRT_RETURN_IF_ERROR(require_input(ctx, i, kFloats | kSignedInts));
  // int8 / int16 are not ONNX MatMul / Gemm types (int8 goes through MatMulInteger).
  DataType t = ctx.input_dtype(i);
  if (t == DataType::kInt8 || t == DataType::kInt16)
    return ctx.unsupported("input " + std::to_string(i) + " has unsupported data type " + dtype_name(t));
  return ok_status();
}

}  // namespace streamrt::ops
