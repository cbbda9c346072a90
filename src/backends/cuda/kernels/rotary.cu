// Rotary on CUDA, mirroring src/ops/rotary.cc: Y = X * cos + rotate_half(X) * sin over the last
// axis, one thread per element, cos and sin through the broadcast indexer.
#include "backends/cuda/kernels/elementwise.cuh"
#include "ops/rotary.h"

namespace streamrt::cuda {
namespace {

template <typename T, typename Idx>
__global__ void rotary_kernel(T* y, const T* x, const T* c, const T* s, Idx n, Idx d, BroadcastIndexer<3> ix) {
  const Idx h = d / 2;
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < n; i += Idx(gridDim.x) * blockDim.x) {
    Idx off[3];
    ix.offsets(i, off);
    const Idx j = i % d;
    const float r = j < h ? -static_cast<float>(to_acc(x[i + h])) : static_cast<float>(to_acc(x[i - h]));
    y[i] = from_acc<T>(static_cast<float>(to_acc(x[i])) * static_cast<float>(to_acc(c[off[1]])) +
                       r * static_cast<float>(to_acc(s[off[2]])));
  }
}

Status rotary_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef &x = ctx.input(0), &c = ctx.input(1), &s = ctx.input(2);
  const ops::TensorRef& y = ctx.output(0);
  SRT_RETURN_IF_ERROR(ops::rotary_check_broadcast(ctx.node(), x.dims, c.dims, s.dims));
  const int64_t n = x.numel();
  if (n == 0) return ok_status();
  const int64_t d = x.dims.back();
  if (d % 2 != 0) return ctx.error("the last axis of X must be even, got " + std::to_string(d));
  BroadcastIndexer<3> ix;
  SRT_RETURN_IF_ERROR(make_indexer<3>(ctx, x.dims, {&x.dims, &c.dims, &s.dims}, &ix));
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    if (n < (int64_t{1} << 31))
      rotary_kernel<T, uint32_t><<<grid_for(n), 256, 0, ctx.stream()>>>(
          y.as<T>(), x.as<const T>(), c.as<const T>(), s.as<const T>(), static_cast<uint32_t>(n),
          static_cast<uint32_t>(d), ix);
    else
      rotary_kernel<T, int64_t><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), x.as<const T>(), c.as<const T>(),
                                                                       s.as<const T>(), n, d, ix);
    SRT_CUDA_LAUNCH("rotary_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Rotary, "Rotary", rotary_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
