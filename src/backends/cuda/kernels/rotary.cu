// Rotary on CUDA, mirroring src/ops/rotary.cc: Y = X * cos + rotate_half(X) * sin over the last
// axis, cos and sin through the broadcast indexer. Where the last axis is a multiple of 16, cos and
// sin are not broadcast along it and every pointer is 16-byte aligned (Llama's heads), a thread
// takes 8 elements of the first half and their 8 partners with one indexer step and 16-byte loads
// (one element a thread, the index arithmetic dominated: a 512-token Llama prefill spent 6 % of its
// GPU time here); else one.
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

// A thread takes 8 elements of a row's first half and the 8 they pair with in the second half: x is
// read once (the one-half version read each element twice, once for itself and once for its partner)
// and one indexer step serves 16 outputs.
template <typename T>
__global__ void rotary_vec_kernel(T* y, const T* x, const T* c, const T* s, uint32_t npairs, uint32_t d,
                                  BroadcastIndexer<3> ix) {
  const uint32_t h = d / 2, per_row = h / 8;
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < npairs; v += gridDim.x * blockDim.x) {
    const uint32_t i = (v / per_row) * d + (v % per_row) * 8;  // in the first half
    uint32_t off[3];
    ix.offsets(i, off);
    float x1[8], x2[8], c1[8], c2[8], s1[8], s2[8], y1[8], y2[8];
    load8(x + i, x1);
    load8(x + i + h, x2);
    load8(c + off[1], c1);
    load8(c + off[1] + h, c2);
    load8(s + off[2], s1);
    load8(s + off[2] + h, s2);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      y1[e] = x1[e] * c1[e] - x2[e] * s1[e];
      y2[e] = x2[e] * c2[e] + x1[e] * s2[e];
    }
    store8(y + i, y1);
    store8(y + i + h, y2);
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
      const auto npairs = static_cast<uint32_t>(n / 16);
      rotary_vec_kernel<T><<<grid_for(npairs), 256, 0, ctx.stream()>>>(y.as<T>(), x.as<const T>(), c.as<const T>(),
                                                                       s.as<const T>(), npairs, static_cast<uint32_t>(d), ix);
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
