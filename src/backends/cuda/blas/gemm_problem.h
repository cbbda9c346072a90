// The cuBLASLt GEMM a float MatMul / Gemm step runs, derived from dims and attributes alone
// (device pointers left null). The kernels (kernels/gemm.cu) and the build-time tuner
// (lt_tactics.cc) both take their calls from here, so the tuner times exactly what runs.
// Semantics mirror src/ops/matmul.cc and src/ops/gemm.cc; errors name the node.
#pragma once

#include "backends/cuda/blas/lt_matmul.h"
#include "ops/gemm.h"

namespace streamrt::cuda {

// numpy matmul shapes of static dims.
struct MatMulShape {
  Dims batch_a, batch_b, batch;  // batch dims of A, B and their broadcast
  int64_t m = 0, k = 0, n = 0;
  Dims out;
};
Result<MatMulShape> matmul_shape(const ir::Node& node, const Dims& a, const Dims& b);

// The call(s) of a float MatMul with a non-empty output and k > 0: one tall GEMM when B is
// shared, a strided batch when the batch broadcast is regular (A shared, or A and B with the
// full batch); otherwise `per_matrix`, and `g` is the call made once per output matrix.
struct MatMulGemm {
  LtGemm g;
  bool per_matrix = false;
};
MatMulGemm matmul_gemm(const MatMulShape& s, DataType dtype);

// Gemm's M, N, K from 2-D A and B, and how C (`c`: its dims, or null when absent) takes part:
// has_c when present and beta != 0, with `cs` its strides broadcast to [M, N].
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool has_c = false;
  std::vector<int64_t> cs = {0, 0};
};
Result<GemmShape> gemm_shape(const ir::Node& node, const ops::GemmAttrs& at, const Dims& a, const Dims& b,
                             const Dims* c);
// The GEMM of a float Gemm with m, n, k > 0 (alpha set; beta and bias are the caller's).
LtGemm gemm_gemm(const ops::GemmAttrs& at, const Dims& a, const Dims& b, const GemmShape& s, DataType dtype);
// C is one row broadcast down (row stride 0, contiguous columns) and beta == 1: the bias
// epilogue adds it (unscaled, which is beta * C exactly then).
bool gemm_bias_epilogue(const ops::GemmAttrs& at, const GemmShape& s);

}  // namespace streamrt::cuda
