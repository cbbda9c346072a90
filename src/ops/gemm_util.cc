#include "ops/gemm_util.h"

#include <cblas.h>

#include <climits>

namespace streamrt::ops {

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
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
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
