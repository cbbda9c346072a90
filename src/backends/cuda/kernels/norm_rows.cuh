// Normalization over "rows" on CUDA, shared by the InstanceNormalization, GroupNormalization and
// MeanVarianceNormalization kernels (the CPU's ops/norm_rows.h): row r is the elements at
// rows.offset(r) + cols.offset(k); a block per row computes its mean and variance in float (two
// passes), then writes (x - mean) * inv_std [* scale[p] + bias[p]] with
// p = ((r * ncols + k) / param_div) % param_size.
#pragma once

#include "backends/cuda/kernels/norm_util.cuh"

namespace streamrt::cuda::norm {

struct RowNormArgs {
  StridedSpace rows, cols;
  int64_t nrows = 0, ncols = 0;
  float epsilon = 1e-5f;
  bool eps_after_sqrt = false;
  int64_t param_div = 1, param_size = 0;  // 0: no scale / bias
};

template <typename T>
__global__ void norm_rows_kernel(const T* x, T* y, const T* scale, const T* bias, RowNormArgs a) {
  __shared__ float scratch[32];
  const float n = static_cast<float>(a.ncols);
  for (int64_t r = blockIdx.x; r < a.nrows; r += gridDim.x) {
    const int64_t base = a.rows.offset(r);
    float sum = 0.f;
    for (int64_t k = threadIdx.x; k < a.ncols; k += blockDim.x) sum += to_acc(x[base + a.cols.offset(k)]);
    const float mean = block_all_reduce(sum, SumOp{}, scratch) / n;
    float sq = 0.f;
    for (int64_t k = threadIdx.x; k < a.ncols; k += blockDim.x) {
      const float d = to_acc(x[base + a.cols.offset(k)]) - mean;
      sq += d * d;
    }
    const float var = block_all_reduce(sq, SumOp{}, scratch) / n;
    const float inv = a.eps_after_sqrt ? 1.f / (sqrtf(var) + a.epsilon) : rsqrtf(var + a.epsilon);
    for (int64_t k = threadIdx.x; k < a.ncols; k += blockDim.x) {
      const int64_t off = base + a.cols.offset(k);
      float v = (to_acc(x[off]) - mean) * inv;
      if (a.param_size) {
        const int64_t p = ((r * a.ncols + k) / a.param_div) % a.param_size;
        v = v * to_acc(scale[p]) + to_acc(bias[p]);
      }
      y[off] = from_acc<T>(v);
    }
  }
}

// rows x cols contiguous elements.
inline RowNormArgs contiguous_rows(int64_t rows, int64_t cols) {
  RowNormArgs a;
  a.rows.rank = a.cols.rank = 1;
  a.rows.dims[0] = rows, a.rows.strides[0] = cols;
  a.cols.dims[0] = cols, a.cols.strides[0] = 1;
  a.nrows = rows, a.ncols = cols;
  return a;
}

// Launches the kernel over X (ctx input 0) into output 0, with scale / bias inputs `si` / `bi`
// when a.param_size > 0. Nothing to do for no rows; empty rows are the caller's.
inline Status launch_norm_rows(CudaKernelContext& ctx, const RowNormArgs& a, size_t si, size_t bi) {
  if (a.nrows == 0 || a.ncols == 0) return ok_status();
  const ops::TensorRef& x = ctx.input(0);
  const int block = block_for_row(a.ncols, 512);
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* scale = a.param_size ? ctx.input(si).as<const T>() : nullptr;
    const T* bias = a.param_size ? ctx.input(bi).as<const T>() : nullptr;
    norm_rows_kernel<T><<<grid_for(a.nrows, 1), block, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<T>(), scale,
                                                                         bias, a);
    SRT_CUDA_LAUNCH("norm_rows_kernel");
    return ok_status();
  });
}

}  // namespace streamrt::cuda::norm
