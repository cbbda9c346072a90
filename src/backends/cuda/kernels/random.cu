// RandomUniform(Like), RandomNormal(Like), Bernoulli and Multinomial on CUDA, mirroring
// src/ops/random_uniform.cc, random_normal.cc, bernoulli.cc and multinomial.cc: every element
// comes from the same inline function the CPU kernel calls (ops/random_util.h), with the host's
// argument checks, so a seeded step gives the CPU's bits. Unseeded, each thread block takes a
// fresh stream from a device counter (one counter for all these ops, hence one file), so every
// launch, a replayed CUDA graph's included, draws new values.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/data_movement.h"
#include "ops/eye_like.h"
#include "ops/random_util.h"

namespace streamrt::cuda {
namespace {

namespace rnd = ops::random;

__device__ unsigned long long g_block_streams = 0;

// The block's key: the seeded key as is; unseeded, a stream of the block's own (the high bit
// keeps device streams apart from the host's execution counter). Every thread calls it.
__device__ rnd::Key block_key(rnd::Key k) {
  __shared__ unsigned long long stream;
  if (k.seeded) return k;
  if (threadIdx.x == 0) stream = atomicAdd(&g_block_streams, 1ull);
  __syncthreads();
  k.stream = (1ull << 63) | stream;
  return k;
}

__device__ __forceinline__ int64_t first_index() { return blockIdx.x * int64_t(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

template <typename Args>
__global__ void fill_kernel(Args a, void* __restrict__ y, int64_t n) {
  a.key = block_key(a.key);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    if constexpr (std::is_same_v<Args, rnd::UniformArgs>) rnd::uniform_element(a, y, i);
    else rnd::normal_element(a, y, i);
  }
}

template <typename Args>
Status launch_fill(CudaKernelContext& ctx, const Args& a) {
  const int64_t n = ctx.output(0).numel();
  if (n == 0) return ok_status();
  fill_kernel<Args><<<grid_for(n), 256, 0, ctx.stream()>>>(a, ctx.output(0).data, n);
  SRT_CUDA_LAUNCH("fill_kernel");
  return ok_status();
}

template <bool kLike>
Status uniform_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(rnd::UniformArgs a, rnd::uniform_args(ctx, kLike));
  return launch_fill(ctx, a);
}

template <bool kLike>
Status normal_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(rnd::NormalArgs a, rnd::normal_args(ctx, kLike));
  return launch_fill(ctx, a);
}

template <typename U>
__global__ void bernoulli_kernel(rnd::Key k, const void* __restrict__ x, DataType xt, U* __restrict__ y, U one,
                                 int64_t n) {
  k = block_key(k);
  for (int64_t i = first_index(); i < n; i += grid_stride())
    y[i] = rnd::bernoulli_element(k, rnd::load_float(x, xt, i), i) ? one : U(0);
}

Status bernoulli_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  if ((ops::dtype_set_of(x.dtype) & ops::kAllFloats) == 0)
    return ctx.unsupported(std::string("input type ") + dtype_name(x.dtype));
  SRT_ASSIGN_OR_RETURN(DataType t, rnd::bernoulli_dtype(ctx.node(), x.dtype));
  SRT_ASSIGN_OR_RETURN(uint64_t one, ops::one_bits(ctx.node(), t));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, t, x.dims));
  SRT_ASSIGN_OR_RETURN(rnd::Key key, rnd::random_key(ctx.node()));
  const int64_t n = x.numel();
  if (n == 0) return ok_status();
  return dispatch_by_size(t, ctx, [&]<typename U>() {
    bernoulli_kernel<U><<<grid_for(n), 256, 0, ctx.stream()>>>(key, x.data, x.dtype, ctx.output(0).as<U>(),
                                                                static_cast<U>(one), n);
    SRT_CUDA_LAUNCH("bernoulli_kernel");
    return ok_status();
  });
}

// One thread per (row, sample); each walks its row (the CPU's order, so the CPU's sums).
__global__ void multinomial_kernel(rnd::MultinomialArgs a, const void* __restrict__ x, void* __restrict__ y, int64_t n) {
  a.key = block_key(a.key);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = rnd::multinomial_sample(a.key, x, a.input, a.classes, i / a.samples, static_cast<uint64_t>(i));
    if (a.output == DataType::kInt64) static_cast<int64_t*>(y)[i] = c;
    else static_cast<int32_t*>(y)[i] = static_cast<int32_t>(c);
  }
}

Status multinomial_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(rnd::MultinomialArgs a, rnd::multinomial_args(ctx));
  const int64_t n = a.batch * a.samples;
  if (n == 0) return ok_status();
  multinomial_kernel<<<grid_for(n), 256, 0, ctx.stream()>>>(a, ctx.input(0).data, ctx.output(0).data, n);
  SRT_CUDA_LAUNCH("multinomial_kernel");
  return ok_status();
}

constexpr ops::DTypeMask kFloatTypes = cuda_dtypes(ops::kAllFloats | kCudaWideTypes);

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(RandomUniform, "RandomUniform", uniform_cuda<false>, kFloatTypes);
STREAMRT_REGISTER_CUDA_KERNEL(RandomUniformLike, "RandomUniformLike", uniform_cuda<true>, kFloatTypes);
STREAMRT_REGISTER_CUDA_KERNEL(RandomNormal, "RandomNormal", normal_cuda<false>, kFloatTypes);
STREAMRT_REGISTER_CUDA_KERNEL(RandomNormalLike, "RandomNormalLike", normal_cuda<true>, kFloatTypes);
STREAMRT_REGISTER_CUDA_KERNEL(Bernoulli, "Bernoulli", bernoulli_cuda, kFloatTypes);
STREAMRT_REGISTER_CUDA_KERNEL(Multinomial, "Multinomial", multinomial_cuda, kFloatTypes);

}  // namespace streamrt::cuda
