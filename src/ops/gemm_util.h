// Shared GEMM plumbing for the compute ops (Gemm, MatMul, Conv): a checked wrapper around
// OpenBLAS cblas_sgemm, a naive fallback for integer types, and float32 staging buffers for
// the half types (BLAS has no fp16/bf16 GEMM, so they are widened, multiplied, narrowed).
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

#include "ops/common.h"
#include "ops/half_gemm.h"

namespace streamrt::ops {

// Row-major C[m x n] = alpha * op(A) * op(B) + beta * C, where op(A) is m x k (A stored k x m
// when trans_a) and op(B) is k x n (B stored n x k when trans_b). lda/ldb/ldc are row strides.
// Fails (kUnsupported) only when a size exceeds BLAS's 32-bit index range.
Status sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc);

// Integer GEMM by plain loops (ONNX allows int32/int64 Gemm and MatMul; they are rare and
// small, so no BLAS). Same layout contract as sgemm; alpha/beta are applied in double.
template <typename T>
void naive_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                const T* a, int64_t lda, const T* b, int64_t ldb, double beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        T av = trans_a ? a[p * lda + i] : a[i * lda + p];
        T bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc = static_cast<T>(acc + av * bv);
      }
      T& out = c[i * ldc + j];
      // Stay in T when the scales are trivial so wide integers keep every bit.
      if (beta == 0.0) out = alpha == 1.0 ? acc : static_cast<T>(alpha * static_cast<double>(acc));
      else if (alpha == 1.0 && beta == 1.0) out = static_cast<T>(acc + out);
      else out = static_cast<T>(alpha * static_cast<double>(acc) + beta * static_cast<double>(out));
    }
  }
}

// Checks input `i` exists with a type the GEMM-shaped ops accept: float32/float16/bfloat16
// through BLAS, int32/int64 through naive_gemm.
Status require_gemm_input(const InferContext& ctx, size_t i);

// A float32 view of `n` elements of type T: the data itself for float, else a widened copy.
template <typename T>
class FloatView {
 public:
  FloatView(const T* p, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      ptr_ = p;
    } else {
      buf_.reset(new float[static_cast<size_t>(n)]);  // every element is written: no zero-fill
      widen(p, buf_.get(), n);
      ptr_ = buf_.get();
    }
  }
  const float* get() const { return ptr_; }

 private:
  const float* ptr_ = nullptr;
  std::unique_ptr<float[]> buf_;
};

// A float32 output buffer for `n` elements of type T: writes go straight to `p` for float;
// otherwise to a staging buffer that flush() narrows into `p`.
template <typename T>
class FloatOut {
 public:
  FloatOut(T* p, int64_t n) : dst_(p), n_(n) {
    if constexpr (std::is_same_v<T, float>) {
      ptr_ = p;
    } else {
      buf_.resize(static_cast<size_t>(n));
      ptr_ = buf_.data();
    }
  }
  float* get() { return ptr_; }
  void flush() {
    if constexpr (!std::is_same_v<T, float>)
      for (int64_t i = 0; i < n_; ++i) dst_[i] = store<T>(buf_[static_cast<size_t>(i)]);
  }

 private:
  T* dst_;
  int64_t n_;
  float* ptr_ = nullptr;
  std::vector<float> buf_;
};

}  // namespace streamrt::ops
