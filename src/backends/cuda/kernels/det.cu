// Det (opset 11) on CUDA, mirroring src/ops/det.cc: LU factorization with partial pivoting in
// double, a block per matrix. Each block copies its matrix into its own slice of the workspace
// (the input stays untouched), then per column: a block-wide search for the pivot (largest
// magnitude, first row on ties, as on the CPU), a row swap, and the elimination of the trailing
// submatrix spread over the block's threads. Blocks stride over the batch.
#include <algorithm>
#include <cmath>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/det.h"

namespace streamrt::cuda {
namespace {

constexpr int kBlock = 256;
// Workspace cap for the per-block copies: fewer blocks (each looping over more matrices) rather
// than more memory. One block is always allowed, whatever its matrix size.
constexpr size_t kMaxScratchBytes = size_t{256} << 20;

// Block-wide argmax of |a[i * m + k]| over rows i in [k, m); every thread gets the row.
__device__ int64_t pivot_row(const double* a, int64_t m, int64_t k, double* sval, int64_t* sidx) {
  double best = -1.0;
  int64_t bi = m;
  for (int64_t i = k + threadIdx.x; i < m; i += blockDim.x) {
    const double v = fabs(a[i * m + k]);
    if (v > best) { best = v; bi = i; }  // rows ascend per thread: the first max stays
  }
  sval[threadIdx.x] = best;
  sidx[threadIdx.x] = bi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const double ov = sval[threadIdx.x + s];
      const int64_t oi = sidx[threadIdx.x + s];
      if (ov > sval[threadIdx.x] || (ov == sval[threadIdx.x] && oi < sidx[threadIdx.x])) {
        sval[threadIdx.x] = ov;
        sidx[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  const int64_t p = sidx[0];
  __syncthreads();  // everyone has read it before the buffers are reused
  return p;
}

template <typename T>
__global__ void det_kernel(const T* x, T* y, double* scratch, int64_t batch, int64_t m) {
  __shared__ double sval[kBlock];
  __shared__ int64_t sidx[kBlock];
  double* a = scratch + blockIdx.x * m * m;
  const int64_t mm = m * m;
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    for (int64_t i = threadIdx.x; i < mm; i += blockDim.x) a[i] = static_cast<double>(to_acc(x[b * mm + i]));
    __syncthreads();
    double det = 1.0;  // tracked identically by every thread (all read the same pivots)
    for (int64_t k = 0; k < m; ++k) {
      const int64_t p = pivot_row(a, m, k, sval, sidx);
      const double pivot = a[p * m + k];
      __syncthreads();  // every thread has read the pivot before the swap moves it
      if (pivot == 0.0) { det = 0.0; break; }
      if (p != k) {
        for (int64_t j = k + threadIdx.x; j < m; j += blockDim.x) {
          const double t = a[k * m + j];
          a[k * m + j] = a[p * m + j];
          a[p * m + j] = t;
        }
        det = -det;
      }
      det *= pivot;
      __syncthreads();
      const int64_t rest = m - k - 1;
      for (int64_t e = threadIdx.x; e < rest * rest; e += blockDim.x) {
        const int64_t i = k + 1 + e / rest, j = k + 1 + e % rest;
        a[i * m + j] -= a[i * m + k] / pivot * a[k * m + j];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) y[b] = from_acc<T>(static_cast<acc_t<T>>(det));
    __syncthreads();  // the slice is rewritten for the next matrix
  }
}

Status det_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input X and output Y");
  const ops::TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(Dims out, ops::det_output_dims(ctx.node(), x.dims));
  const ops::TensorRef& y = ctx.output(0);
  if (y.dims != out || y.dtype != x.dtype)
    return ctx.error("output " + dims_to_string(y.dims) + " does not match " + dims_to_string(out));
  const int64_t batch = dims_numel(out);
  if (batch == 0) return ok_status();
  const int64_t m = x.dims.back();
  const size_t per_block = static_cast<size_t>(std::max<int64_t>(m * m, 1)) * sizeof(double);
  const int64_t sms = std::max(ctx.resources().sm_count, 1);
  int64_t blocks = std::min<int64_t>({batch, sms * 4, static_cast<int64_t>(kMaxScratchBytes / per_block)});
  blocks = std::max<int64_t>(blocks, 1);
  SRT_RETURN_IF_ERROR(ctx.resources().ensure_workspace(per_block * static_cast<size_t>(blocks)));
  auto* scratch = static_cast<double*>(ctx.resources().workspace);
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    det_kernel<T><<<static_cast<unsigned>(blocks), kBlock, 0, ctx.stream()>>>(x.as<T>(), y.as<T>(), scratch, batch, m);
    SRT_CUDA_LAUNCH("det_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Det, "Det", det_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
