// Rotation of a MatMulGroup's products in place (ops/matmul_group.h, inputs 8..11): row r of a
// product [rows, n] as n / d heads of d, each rotated as the Rotary op rotates a head
// (kernels/rotary.cu) by row r % table_rows of cos / sin [table_rows, d]. What kernels/matmul_group.cu
// runs after its GEMMs where the group GEMM does not rotate in its epilogue.
#pragma once

#include <cstdint>
#include <span>

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

struct RotaryRows {
  void* y = nullptr;  // [rows, n], rotated in place
  const void* cos = nullptr;
  const void* sin = nullptr;  // [table_rows, d] each
  int64_t rows = 0, n = 0, d = 0, table_rows = 0;
};

// Enqueues the rotations of `parts` (one or two: a layer's Q and K) on res.stream, in one launch
// where both take the 8-element path (d a multiple of 16, 16-byte aligned pointers); a dependent
// launch where res allows (dependent_launch.cuh).
Status rotate_rows(const CudaResources& res, DataType t, std::span<const RotaryRows> parts);

}  // namespace streamrt::cuda
