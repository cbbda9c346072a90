// A float MatMul of one matrix by a 2-D weight, run as a MatMul step runs it (gemm.cu): for
// kernels that multiply by weights of their own (MatMulGroup's many-row path).
#pragma once

#include <cstdint>

#include "backends/cuda/blas/lt_matmul.h"
#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

struct Matmul2d {
  DataType dtype = DataType::kFloat16;  // every operand's (a float type)
  int64_t rows = 0, k = 0, n = 0;
  const void* a = nullptr;     // rows x k, row-major
  const void* w = nullptr;     // k x n, row-major
  const void* bias = nullptr;  // n, or null
  void* y = nullptr;           // rows x n
};

// Enqueues y = a @ w (+ bias) on res.stream: cuBLASLt with `tactics` (the bias in its epilogue),
// the tiled kernel where cuBLASLt has no algorithm, a bias kernel where the epilogue has none.
Status matmul_2d(CudaResources& res, const LtStepTactics& tactics, const Matmul2d& p);

}  // namespace streamrt::cuda
