// Normalization over "rows" of a tensor, shared by the CPU kernels of InstanceNormalization,
// GroupNormalization and MeanVarianceNormalization: row r is the elements at offsets
// row_base[r] + col_off[k]; each is normalized with its row's mean and variance (two passes in
// double: no cancellation when |mean| >> stddev), then scaled and shifted by an optional
// per-channel (or per-group) parameter.
#pragma once

#include <cmath>

#include "ops/common.h"

namespace streamrt::ops {

struct RowNorm {
  std::vector<int64_t> row_base, col_off;
  double epsilon = 1e-5;
  bool eps_after_sqrt = false;  // MVN: (x - mean) / (sqrt(var) + eps); else / sqrt(var + eps)
  // Scale and bias (both or neither) of element k of row r: index ((r * cols + k) / param_div) % size.
  std::vector<float> scale, bias;
  int64_t param_div = 1;
};

// rows x cols contiguous elements.
inline RowNorm contiguous_rows(int64_t rows, int64_t cols) {
  RowNorm s;
  for (int64_t r = 0; r < rows; ++r) s.row_base.push_back(r * cols);
  for (int64_t k = 0; k < cols; ++k) s.col_off.push_back(k);
  return s;
}

template <typename T>
void normalize_rows(const RowNorm& s, const T* x, T* y) {
  const int64_t cols = static_cast<int64_t>(s.col_off.size());
  const int64_t psize = static_cast<int64_t>(s.scale.size());
  for (size_t r = 0; r < s.row_base.size(); ++r) {
    const T* xr = x + s.row_base[r];
    double sum = 0;
    for (int64_t off : s.col_off) sum += static_cast<double>(load(xr[off]));
    const double mean = cols ? sum / static_cast<double>(cols) : 0.0;
    double sq = 0;
    for (int64_t off : s.col_off) {
      const double d = static_cast<double>(load(xr[off])) - mean;
      sq += d * d;
    }
    const double var = cols ? sq / static_cast<double>(cols) : 0.0;
    const double inv = s.eps_after_sqrt ? 1.0 / (std::sqrt(var) + s.epsilon) : 1.0 / std::sqrt(var + s.epsilon);
    for (int64_t k = 0; k < cols; ++k) {
      double v = (static_cast<double>(load(xr[s.col_off[k]])) - mean) * inv;
      if (psize) {
        const int64_t p = ((static_cast<int64_t>(r) * cols + k) / s.param_div) % psize;
        v = v * s.scale[p] + s.bias[p];
      }
      y[s.row_base[r] + s.col_off[k]] = store<T>(static_cast<compute_t<T>>(v));
    }
  }
}

// Parameter input `i` widened to float (float32 / float16 / bfloat16).
inline Result<std::vector<float>> param_floats(const KernelContext& ctx, size_t i) {
  const TensorRef& p = ctx.input(i);
  return Tensor::view(p.dtype, p.dims, p.data, nullptr).to_float_vector();
}

// Shape rule: parameter input `i` (scale / bias) present, of X's type, 1-D of `want` values
// (-1: not known yet); `per` says what a value is for (in the error).
inline Status check_norm_param(const InferContext& ctx, size_t i, const char* name, int64_t want, const char* per) {
  if (!ctx.has_input(i)) return ctx.error(std::string("missing input ") + name);
  if (ctx.input_dtype(i) != ctx.input_dtype(0))
    return ctx.error(std::string(name) + " has type " + dtype_name(ctx.input_dtype(i)) + ", X has " +
                     dtype_name(ctx.input_dtype(0)));
  if (!ctx.input(i).has_shape) return ok_status();
  const Dims& p = ctx.input_dims(i);
  if (p.size() != 1 || (p[0] >= 0 && want >= 0 && p[0] != want))
    return ctx.error(std::string(name) + " has shape " + dims_to_string(p) + ", expected [" + std::to_string(want) +
                     "] (one per " + per + ")");
  return ok_status();
}

}  // namespace streamrt::ops
