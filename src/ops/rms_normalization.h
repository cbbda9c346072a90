// RMSNormalization's row arithmetic on the CPU, shared with MatMulGroup's fused normalization
// (ops/matmul_group.h) so that both give the same bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/common.h"

namespace streamrt::ops {

// y[r, i] = x[r, i] / sqrt(mean(x[r, :]^2) + eps) * scale[i % scale_n] for `rows` rows of n;
// the sum of squares in double, the rest in float, rounded to T once. scale may be null (1).
template <typename T>
void rms_norm_rows(const T* x, const T* scale, int64_t scale_n, T* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = load(xr[i]);
      sum += v * v;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; ++i) {
      float s = scale ? static_cast<float>(load(scale[i % scale_n])) : 1.f;
      y[r * n + i] = store<T>(static_cast<float>(load(xr[i])) * inv * s);
    }
  }
}

}  // namespace streamrt::ops
