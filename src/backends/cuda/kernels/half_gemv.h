// A few rows of A times float16 / bfloat16 weights stored as ONNX has them (K x N, row-major): the
// decode steps' products (one row at batch 1, a row a sequence in a batch), which only read the
// weights. Used by MatMul (kernels/gemm.cu) when B is one 2-D matrix and A has one to eight rows in
// all, and by MatMulGroup (kernels/matmul_group.cu) for up to three weights at once, with A
// RMS-normalized as it is staged and SwiGLU's gate in the epilogue: one launch where a decode step
// had a normalization, three projections and a gate. One row runs the GEMV of half_gemv.cu; two to
// eight rows the tensor-core kernel of few_row_gemm.cu.
#pragma once

#include <array>
#include <cstdint>

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

struct HalfGemv {
  DataType dtype = DataType::kFloat16;  // kFloat16 or kBFloat16, of every operand
  int64_t rows = 0, k = 0;              // rows of A (1 to 8)
  const void* a = nullptr;              // rows x k
  // RMS normalization of A first: a[j] / sqrt(mean(a^2) + eps) * scale[j], rounded to the type.
  const void* norm_scale = nullptr;  // k, or null: A as it is
  float eps = 0.f;
  struct Part {
    const void* w = nullptr;     // k x n
    const void* bias = nullptr;  // n, or null
    void* y = nullptr;           // rows x n
    int64_t n = 0;
    // Rotary tables [table_rows, rotary_dim], or null: y's row r rotated per head by table row
    // r % table_rows in the epilogue, as kernels/rotary.h's rotate_rows does after a product.
    const void* cos = nullptr;
    const void* sin = nullptr;
    int64_t table_rows = 0;
  };
  int parts = 1;  // 1 to 3
  std::array<Part, 3> part = {};
  const void* residual = nullptr;  // rows x n added to the product (one part only), or null
  // Two parts of one n: part[0].y = silu(P0) * P1 (each product rounded to the type first, as
  // FusedElementwise's gate reads them); part[1].y is not written.
  bool gate = false;
  // The head size of the parts with rotary tables (an even power of two that divides the block's
  // columns: 64 for one row, 64 / 128 / 256 for more; no gate or residual with them), else 0.
  int64_t rotary_dim = 0;
  // Two to eight rows (few_row_gemm.cu): `cols` output columns a block (64, 128, 256), K split over
  // `split` blocks and a ring of `slots` stages a block; 0 = the kernel's choice
  // (bench/tools/few_row_bench sweeps them).
  int cols = 0, split = 0, slots = 0;
};

// Whether half_gemv takes `g` on a device of compute capability `cc_major` (types, rows, each N a
// multiple of 8 and each W 16-byte aligned: it reads W in 16-byte runs; K within one cluster's
// chunks; more than one row: sm_80, A 16-byte aligned, K a multiple of 8, and
// RuntimeOptions::few_row_kernel).
bool half_gemv_applies(const HalfGemv& g, int cc_major);
// Whether a product of `rows` rows of `dtype` is the GEMV's kind (the operands may still rule it
// out: half_gemv_applies).
inline bool half_gemv_rows(DataType dtype, int64_t rows) {
  return rows >= 1 && rows <= 8 && (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16);
}
// Enqueues every part's y = norm(a) @ w (+ bias) (+ residual), or the gate, on res.stream,
// accumulating in float; kUnsupported (nothing enqueued) where it does not apply. K is split over
// a cluster on res.cc_major >= 9.
Status half_gemv(CudaResources& res, const HalfGemv& g);

// The two-to-eight-row kernel (few_row_gemm.cu), which half_gemv calls.
bool few_row_gemm_applies(const HalfGemv& g, int cc_major);
Status few_row_gemm(CudaResources& res, const HalfGemv& g);

}  // namespace streamrt::cuda
