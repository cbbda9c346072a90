// GlobalAveragePool / GlobalMaxPool on CUDA (src/ops/global_pool.cc): every spatial axis of
// X [N, C, D1..Dn] reduces to 1. One block per (n, c) plane, a shared-memory tree reduction
// in float.
#include <cmath>

#include "backends/cuda/kernels/cuda_types.cuh"

namespace streamrt::cuda {
namespace {

constexpr int kMaxBlock = 256;

// The CPU's max skips NaNs (v > acc is false for them) and starts at -inf; sums start at 0.
template <bool kMax>
__device__ __forceinline__ float combine(float acc, float v) {
  if constexpr (kMax) return v > acc ? v : acc;
  else return acc + v;
}

template <typename T, bool kMax>
__global__ void global_pool_kernel(const T* x, T* y, int64_t planes, int64_t size) {
  __shared__ float part[kMaxBlock];
  const int tid = threadIdx.x;
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const T* xp = x + p * size;
    float acc = kMax ? -INFINITY : 0.f;
    for (int64_t i = tid; i < size; i += blockDim.x) acc = combine<kMax>(acc, to_acc(xp[i]));
    part[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (tid < s) part[tid] = combine<kMax>(part[tid], part[tid + s]);
      __syncthreads();
    }
    // An empty spatial extent averages to 0 rather than 0/0.
    if (tid == 0) y[p] = from_acc<T>(kMax || size == 0 ? part[0] : part[0] / static_cast<float>(size));
    __syncthreads();  // part[] is reused for the next plane
  }
}

Status global_pool_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  if (x.dims.size() < 2) return ctx.error("X has shape " + dims_to_string(x.dims) + ", expected rank >= 2");
  const int64_t planes = x.dims[0] * x.dims[1];
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  if (ctx.output(0).numel() != planes) return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims));
  const bool max = ctx.node().op_type == "GlobalMaxPool";
  // Block: the smallest power of two >= size within [32, 256] (small planes such as 7x7
  // leave fewer threads idle).
  int block = 32;
  while (block < kMaxBlock && block < size) block *= 2;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(planes, int64_t{1} << 20));
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() -> Status {
    if (planes == 0) return ok_status();
    if (max) global_pool_kernel<T, true><<<grid, block, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<T>(), planes, size);
    else global_pool_kernel<T, false><<<grid, block, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<T>(), planes, size);
    SRT_CUDA_LAUNCH("global_pool_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(GlobalAveragePool, "GlobalAveragePool", global_pool_cuda, cuda_dtypes(ops::kFloats));
STREAMRT_REGISTER_CUDA_KERNEL(GlobalMaxPool, "GlobalMaxPool", global_pool_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
