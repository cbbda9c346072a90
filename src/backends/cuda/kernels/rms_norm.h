// RMSNormalization's CUDA rows (rms_norm.cu), also run by MatMulGroup's many-row path
// (kernels/matmul_group.cu) before its GEMMs.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

// Enqueues y[r, i] = x[r, i] / sqrt(mean(x[r, :]^2) + eps) * scale[i % scale_n] (scale may be
// null) for `rows` rows of n elements of `dtype` (a float type) on `stream`.
Status rms_norm_rows(cudaStream_t stream, DataType dtype, const void* x, const void* scale, int64_t scale_n, void* y,
                     int64_t rows, int64_t n, float eps);

}  // namespace streamrt::cuda
