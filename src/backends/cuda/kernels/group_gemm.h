// The products of a MatMulGroup (ops/matmul_group.h) in one launch on sm_90a: Y_i = X W_i (+ b_i)
// for every weight W_i [K, N_i] of the group, or, with `gate`, Y = silu(X W_0 + b_0) * (X W_1 + b_1)
// from both products' tiles without writing either (SwiGLU's gate in the GEMM's epilogue). Each
// block computes a 128-row tile of one weight's 128 or 256 columns (gate's and up's 64 or 128 side
// by side with `gate`), so a layer's Q / K / V take one launch instead of three small GEMMs and
// gate / up skip the two products' round trip through memory; Q and K may be rotated there too (Rotary's
// arithmetic, heads of 64 or 128 inside a tile). Rounding as the unfused steps: each product rounded to X's type
// (after its bias), the gate or the rotation computed from the rounded products in float and rounded once.
// Compiled into the sm_90a object (group_gemm.cu); kernels/matmul_group.cu takes it where the
// build's tactics timed it faster than cuBLASLt's GEMMs (lt_tactics.cc, "__group_gemm").
#pragma once

#include <array>
#include <cstdint>

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

struct GroupGemm {
  DataType dtype = DataType::kUndefined;  // float16 or bfloat16
  int64_t rows = 0, k = 0;
  const void* x = nullptr;  // [rows, k], row-major
  int parts = 0;            // weights (1..3; 2 with gate)
  bool gate = false;
  struct Part {
    const void* w = nullptr;     // [k, n], row-major
    const void* bias = nullptr;  // [n] or null
    void* y = nullptr;           // [rows, n] (the gate's output for part 0; null for part 1)
    int64_t n = 0;
    // Rotary tables [table_rows, rotary_dim] (parts 0 and 1, no gate): y's row r rotated per head
    // by table row r % table_rows in the epilogue (kernels/rotary.h says how).
    const void* cos = nullptr;
    const void* sin = nullptr;
    int64_t table_rows = 0;
  };
  std::array<Part, 3> part{};
  // Accumulator columns a block: 128 or 256 (with the gate, half of them gate's, half up's); 0 =
  // group_gemm_default_cols. The build's tactics time both (lt_tactics.cc).
  int cols = 0;
  int64_t rotary_dim = 0;  // the head size where a part has tables: 64 or 128
};

// 256 for the gate, and where every weight's N is a multiple of 256 and such tiles make two waves
// of blocks on res.sm_count SMs (unless heads of 128 are rotated); else 128.
int group_gemm_default_cols(const GroupGemm& g, const CudaResources& res);
// Whether the kernel takes these operands on this device (compute capability 9.0, 16-bit floats,
// 16-byte aligned operands and rows, sizes within its int indexing, rotary heads of 64 or 128 in
// whole tiles); no launch.
bool group_gemm_applies(const GroupGemm& g, const CudaResources& res);
// Enqueues the products on `stream`; kUnsupported where group_gemm_applies is false.
Status group_gemm(const GroupGemm& g, const CudaResources& res, cudaStream_t stream);

}  // namespace streamrt::cuda
