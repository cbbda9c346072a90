// Rotary on CUDA, mirroring src/ops/rotary.cc: Y = X * cos + rotate_half(X) * sin over the last
// axis, cos and sin through the broadcast indexer. Where the last axis is a multiple of 16, cos and
// sin are not broadcast along it and every pointer is 16-byte aligned (Llama's heads), a thread
// takes 8 elements of one half with one indexer step and 16-byte loads (one element a thread, the
// index arithmetic dominated: a 512-token Llama prefill spent 6 % of its GPU time here); else one.
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

template <typename T>
__global__ void rotary_vec_kernel(T* y, const T* x, const T* c, const T* s, uint32_t nvec, uint32_t d,
                                  BroadcastIndexer<3> ix) {
  const uint32_t h = d / 2;
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += gridDim.x * blockDim.x) {
    const uint32_t i = v * 8;
    uint32_t off[3];
    ix.offsets(i, off);
    const bool first = i % d < h;  // the 8 elements lie in one half (h is a multiple of 8)
    float xv[8], pv[8], cv[8], sv[8], out[8];
    load8(x + i, xv);
    load8(x + (first ? i + h : i - h), pv);
    load8(c + off[1], cv);
    load8(s + off[2], sv);
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = xv[e] * cv[e] + (first ? -pv[e] : pv[e]) * sv[e];
    store8(y + i, out);
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
  const bool vec = d % 16 == 0 && c.dims.size() > 0 && c.dims.back() == d && s.dims.size() > 0 &&
                   s.dims.back() == d && aligned16(x.data) && aligned16(y.data) && aligned16(c.data) &&
                   aligned16(s.data) && n < (int64_t{1} << 31);
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    if (vec) {
      const auto nvec = static_cast<uint32_t>(n / 8);
      rotary_vec_kernel<T><<<grid_for(nvec), 256, 0, ctx.stream()>>>(y.as<T>(), x.as<const T>(), c.as<const T>(),
                                                                     s.as<const T>(), nvec, static_cast<uint32_t>(d), ix);
      SRT_CUDA_LAUNCH("rotary_vec_kernel");
      return ok_status();
    }
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
