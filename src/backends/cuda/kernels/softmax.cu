// Softmax and LogSoftmax on CUDA, mirroring src/ops/softmax.cc (axis and geometry come from
// ops::softmax_geometry, the same code as the CPU kernel):
//   opset < 13: the input is coerced to 2-D at `axis` (default 1), each row of prod(dims[axis:])
//               normalized on its own; opset >= 13: normalized along the single axis (default -1).
// The tensor is viewed as [outer, dim, inner]. inner == 1 (the common case): a warp per row for
// rows up to kWarpRowMax elements, a block per row above; inner > 1: a thread per (outer, inner)
// column walking the axis with stride inner (adjacent threads read adjacent elements).
// Max and sum reduce in float; the row maximum is subtracted before exp, as on the CPU.
#include <cmath>

#include "backends/cuda/kernels/norm_util.cuh"
#include "ops/softmax.h"

namespace streamrt::cuda {
namespace {

using norm::MaxOp;
using norm::SumOp;

constexpr int64_t kWarpRowMax = 1024;
constexpr int kWarpsPerBlock = 8;
constexpr int kRowBlock = 512;

using Geometry = ops::SoftmaxGeometry;

// Writes row element k given the row's max and sum of exp(v - max).
template <typename T, bool kLog>
__device__ __forceinline__ T softmax_value(float v, float mx, float sum) {
  if constexpr (kLog) return from_acc<T>(v - mx - logf(sum));
  else return from_acc<T>(expf(v - mx) * (1.0f / sum));
}

// A warp per contiguous row (inner == 1); rows are uniform per warp so every lane shuffles.
template <typename T, bool kLog>
__global__ void softmax_warp_rows(const T* x, T* y, int64_t rows, int64_t dim) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32; r < rows; r += warps) {
    const T* xr = x + r * dim;
    T* yr = y + r * dim;
    float mx = -INFINITY;
    for (int64_t k = lane; k < dim; k += 32) mx = MaxOp{}(mx, to_acc(xr[k]));
    mx = norm::warp_all_reduce(mx, MaxOp{});
    float sum = 0.f;
    for (int64_t k = lane; k < dim; k += 32) sum += expf(to_acc(xr[k]) - mx);
    sum = norm::warp_all_reduce(sum, SumOp{});
    for (int64_t k = lane; k < dim; k += 32) yr[k] = softmax_value<T, kLog>(to_acc(xr[k]), mx, sum);
  }
}

// A block per contiguous row (inner == 1, long rows); rows are uniform per block.
template <typename T, bool kLog>
__global__ void softmax_block_rows(const T* x, T* y, int64_t rows, int64_t dim) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * dim;
    T* yr = y + r * dim;
    float mx = -INFINITY;
    for (int64_t k = threadIdx.x; k < dim; k += blockDim.x) mx = MaxOp{}(mx, to_acc(xr[k]));
    mx = norm::block_all_reduce(mx, MaxOp{}, scratch);
    float sum = 0.f;
    for (int64_t k = threadIdx.x; k < dim; k += blockDim.x) sum += expf(to_acc(xr[k]) - mx);
    sum = norm::block_all_reduce(sum, SumOp{}, scratch);
    for (int64_t k = threadIdx.x; k < dim; k += blockDim.x) yr[k] = softmax_value<T, kLog>(to_acc(xr[k]), mx, sum);
  }
}

// A thread per (outer, inner) column of a [outer, dim, inner] tensor, inner > 1.
template <typename T, bool kLog>
__global__ void softmax_strided(const T* x, T* y, int64_t outer, int64_t dim, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < n; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, j = c - o * inner;
    const int64_t base = o * dim * inner + j;
    float mx = -INFINITY;
    for (int64_t k = 0; k < dim; ++k) mx = MaxOp{}(mx, to_acc(x[base + k * inner]));
    float sum = 0.f;
    for (int64_t k = 0; k < dim; ++k) sum += expf(to_acc(x[base + k * inner]) - mx);
    for (int64_t k = 0; k < dim; ++k)
      y[base + k * inner] = softmax_value<T, kLog>(to_acc(x[base + k * inner]), mx, sum);
  }
}

template <typename T, bool kLog>
Status launch(CudaKernelContext& ctx, const Geometry& g) {
  const T* x = ctx.input(0).as<const T>();
  T* y = ctx.output(0).as<T>();
  cudaStream_t s = ctx.stream();
  if (g.inner == 1 && g.dim <= kWarpRowMax) {
    softmax_warp_rows<T, kLog><<<grid_for(g.outer, kWarpsPerBlock), kWarpsPerBlock * 32, 0, s>>>(x, y, g.outer, g.dim);
    SRT_CUDA_LAUNCH("softmax_warp_rows");
  } else if (g.inner == 1) {
    softmax_block_rows<T, kLog><<<grid_for(g.outer, 1), kRowBlock, 0, s>>>(x, y, g.outer, g.dim);
    SRT_CUDA_LAUNCH("softmax_block_rows");
  } else {
    softmax_strided<T, kLog><<<grid_for(g.outer * g.inner), 256, 0, s>>>(x, y, g.outer, g.dim, g.inner);
    SRT_CUDA_LAUNCH("softmax_strided");
  }
  return ok_status();
}

Status softmax_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (y.dims != x.dims || y.dtype != x.dtype)
    return ctx.error("output " + dims_to_string(y.dims) + " does not match the input " + dims_to_string(x.dims));
  SRT_ASSIGN_OR_RETURN(Geometry g, ops::softmax_geometry(ctx.node(), x.dims));
  if (x.numel() == 0) return ok_status();
  const bool log_softmax = ctx.node().op_type == "LogSoftmax";
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    return log_softmax ? launch<T, true>(ctx, g) : launch<T, false>(ctx, g);
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Softmax, "Softmax", softmax_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(LogSoftmax, "LogSoftmax", softmax_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
