// One row of A times a float16 / bfloat16 weight stored as ONNX has it (K x N, row-major): the
// batch-1 decode-step MatMul, which only reads the weight (a Llama-3.2-1B-shape token: 1.37 ms
// with this, 1.46 with cuBLASLt's kernels, H200). Used by MatMul (kernels/gemm.cu) when B is one
// 2-D matrix and A has one row in all.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

struct HalfGemv {
  DataType dtype = DataType::kFloat16;  // kFloat16 or kBFloat16, of every operand
  int64_t rows = 0, k = 0, n = 0;  // the caller's row count: the GEMV takes 1
  const void* a = nullptr;         // rows x k
  const void* w = nullptr;         // k x n
  const void* bias = nullptr;      // n, or null
  const void* residual = nullptr;  // rows x n added to the product, or null
  void* y = nullptr;               // rows x n
};

// Whether half_gemv takes `g` (types, rows, N a multiple of 8 and W 16-byte aligned: it reads W
// in 16-byte runs).
bool half_gemv_applies(const HalfGemv& g);
// Enqueues y = a @ w (+ bias) (+ residual) on res.stream, accumulating in float; kUnsupported
// (nothing enqueued) where it does not apply. K is split over a cluster on res.cc_major >= 9.
Status half_gemv(CudaResources& res, const HalfGemv& g);

}  // namespace streamrt::cuda
