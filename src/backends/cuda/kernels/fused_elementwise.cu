// FusedElementwise on CUDA: each thread evaluates the program (ops/fused_elementwise.h) for its
// output elements, reading every input once through the broadcast indexer.
#include "backends/cuda/kernels/elementwise.cuh"
#include "ops/fused_elementwise.h"

namespace streamrt::cuda {
namespace {

using ops::fused::kMaxInputs;
using ops::fused::Program;

template <typename T>
struct Inputs {
  const T* ptr[kMaxInputs];
};

template <typename T, typename Idx>
__global__ void fused_kernel(T* y, Idx n, BroadcastIndexer<kMaxInputs> ix, Inputs<T> in, Program p) {
  float vals[kMaxInputs];
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < n; i += Idx(gridDim.x) * blockDim.x) {
    Idx off[kMaxInputs];
    ix.offsets(i, off);
#pragma unroll
    for (int k = 0; k < kMaxInputs; ++k)
      if (k < p.num_inputs) vals[k] = static_cast<float>(to_acc(in.ptr[k][off[k]]));
    y[i] = from_acc<T>(ops::fused::evaluate(p, vals));
  }
}

// Every input has the output's element count or is a scalar: no broadcast index arithmetic.
template <typename T, typename Idx>
__global__ void fused_flat_kernel(T* y, Idx n, Inputs<T> in, uint32_t scalar_mask, Program p) {
  float vals[kMaxInputs];
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < n; i += Idx(gridDim.x) * blockDim.x) {
#pragma unroll
    for (int k = 0; k < kMaxInputs; ++k)
      if (k < p.num_inputs) vals[k] = static_cast<float>(to_acc(in.ptr[k][(scalar_mask >> k) & 1u ? 0 : i]));
    y[i] = from_acc<T>(ops::fused::evaluate(p, vals));
  }
}

Status fused_cuda(CudaKernelContext& ctx) {
  Program p;
  std::string why;
  if (!ops::fused::decode(ctx.node(), ctx.num_inputs(), &p, &why)) return ctx.error(why);
  const ops::TensorRef& y = ctx.output(0);
  const int64_t n = y.numel();
  if (n == 0) return ok_status();
  static const Dims kScalar;
  std::array<const Dims*, kMaxInputs> shapes;
  for (int k = 0; k < kMaxInputs; ++k) shapes[k] = k < p.num_inputs ? &ctx.input(k).dims : &kScalar;
  BroadcastIndexer<kMaxInputs> ix;
  SRT_RETURN_IF_ERROR(make_indexer<kMaxInputs>(ctx, y.dims, shapes, &ix));
  uint32_t scalar_mask = 0;
  bool flat = true;
  for (int k = 0; k < p.num_inputs; ++k) {
    const int64_t m = ctx.input(k).numel();
    if (m == 1) scalar_mask |= 1u << k;
    else flat = flat && m == n;
  }
  return cuda_dispatch<ops::kFloats>(y.dtype, ctx.node().describe(), [&]<typename T>() {
    Inputs<T> in{};
    for (int k = 0; k < p.num_inputs; ++k) in.ptr[k] = ctx.input(k).as<const T>();
    if (flat && n < (int64_t{1} << 31)) {
      fused_flat_kernel<T, int32_t><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), static_cast<int32_t>(n), in,
                                                                            scalar_mask, p);
      SRT_CUDA_LAUNCH("fused_flat_kernel");
      return ok_status();
    }
    if (n < (int64_t{1} << 31))
      fused_kernel<T, int32_t><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), static_cast<int32_t>(n), ix, in, p);
    else
      fused_kernel<T, int64_t><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), n, ix, in, p);
    SRT_CUDA_LAUNCH("fused_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(FusedElementwise, "FusedElementwise", fused_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
