// Row-major GEMM on the device through cuBLASLt, for the float types (float32 / float16 /
// bfloat16, always accumulated in float32: CUBLAS_COMPUTE_32F, never TF32, so float32 results
// match the CPU's sgemm within rounding).
//
//   D[m x n] = alpha * op(A) * op(B) + beta * D  (+ bias[n] added to every row)
//
// cuBLASLt is column-major; a row-major matrix is the column-major view of its transpose, so
// the call computes D^T = op(B)^T * op(A)^T with cuBLAS's "A" being our B and "B" our A.
#pragma once

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

struct LtGemm {
  DataType dtype = DataType::kFloat32;  // of A, B, D and bias
  bool trans_a = false;  // A stored k x m (row-major) when set, else m x k
  bool trans_b = false;  // B stored n x k when set, else k x n
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0;  // row stride (elements) of A as stored
  const void* b = nullptr;
  int64_t ldb = 0;
  void* d = nullptr;  // output, also the C operand (in place) when beta != 0
  int64_t ldd = 0;
  // Strided batch: `batch` GEMMs, matrix i at a + i * stride_a etc. (a stride of 0 shares the
  // operand between all batches).
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  float alpha = 1.f;
  float beta = 0.f;
  // Optional row vector of n elements (type dtype) added to every row of D through the
  // epilogue (CUBLASLT_EPILOGUE_BIAS). Only with batch == 1.
  const void* bias = nullptr;
};

// Enqueues the GEMM on res.stream with res.workspace. kUnsupported when cuBLASLt has no
// algorithm for it (callers with a bias fall back to a plain GEMM); k must be > 0 and m, n > 0.
Status lt_matmul(CudaResources& res, const LtGemm& g);

}  // namespace streamrt::cuda
