// Attention on CUDA, mirroring src/ops/attention.cc (attributes and geometry come from
// ops::attention_attrs / ops::attention_geometry, the same code as the CPU kernel).
//
// Both kernels are flash-attention style: an online softmax over key tiles (running row max m,
// running sum l, output rescaled by exp(m_old - m_new)), so the [Sq, Skv] scores never reach
// global memory. Scores, softmax and accumulation are float; a row with no unmasked key ends with
// l = 0 and gives NaN, like the CPU kernel and the unfused Softmax.
//  - the warpgroup-MMA kernel (sm_90, float16 / bfloat16, prefill at D == Dv == 128, and at 64
//    from 2048 query rows): attention_wgmma.cu.
//  - the tensor-core kernel (float16 / bfloat16, D == Dv in {64, 128, 256}): attention_tc.cu.
//  - attention_simple (float32, and any other D / Dv): a warp per query row, lanes split keys
//    (32 at a time, from the row's causal / window bounds) for the scores and the Dv columns for
//    the output (256 columns per pass).
//    RuntimeOptions::attention_kernel (streamrt run --attention-kernel) picks for A/B runs without a
//    rebuild: kSimple forces the warp-per-row kernel for every call, kMma keeps the mma.sync kernel
//    where the warpgroup one would run, kWgmma takes the warpgroup one below its length rules too
//    (cuda_run_options.h says how the options get here).
// A row left without a key of finite score ends with l = 0: NaN (0 with nan_to_zero) or, with a
// finite mask_fill, the mean of V over all keys, summed in a second pass by the rows that need it.
#include <cmath>
#include <string>

#include "backends/cuda/cuda_run_options.h"
#include "backends/cuda/kernels/attention_common.cuh"

namespace streamrt::cuda {
namespace {

using attention::bounds;
using attention::kAdditiveMask;
using attention::kBoolMask;
using attention::key_on;
using attention::kNoMask;
using attention::masked_score;
using attention::Offsets;
using attention::Params;

// ----------------------------------------------------------------------------- simple kernel

constexpr int kSimpleWarps = 4;
constexpr int kSimpleCols = 8;  // output columns per lane and pass: 256 per warp

template <typename T>
__global__ void __launch_bounds__(kSimpleWarps * 32) attention_simple(const Params p) {
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  T* y = static_cast<T*>(p.y);
  const int lane = threadIdx.x % 32;
  const int64_t rows = p.batch * p.sq;
  const int64_t warps = int64_t(gridDim.x) * kSimpleWarps;
  // Everything below is uniform per warp (row, limit, trip counts), so every lane shuffles.
  for (int64_t row = blockIdx.x * int64_t(kSimpleWarps) + threadIdx.x / 32; row < rows; row += warps) {
    const int64_t b = row / p.sq, i = row - b * p.sq;
    const Offsets o = p.map.offsets(b);
    const T* qr = q + o.q + i * p.q_row;
    const ops::KeyBounds kb = bounds(p, i);
    const int64_t limit = kb.hi;
    for (int64_t c0 = 0; c0 < p.dv; c0 += 32 * kSimpleCols) {
      float m = -INFINITY, l = 0.f, acc[kSimpleCols];
#pragma unroll
      for (int t = 0; t < kSimpleCols; ++t) acc[t] = 0.f;
      for (int64_t j0 = kb.lo; j0 < limit; j0 += 32) {
        const int64_t j = j0 + lane;
        float s = -INFINITY;
        if (j < limit && (!p.key_mask || key_on(p, o.key_mask, j))) {
          const T* kr = k + o.k + j * p.k_key;
          float dot = 0.f;
          for (int64_t c = 0; c < p.d; ++c) dot += static_cast<float>(to_acc(qr[c])) * static_cast<float>(to_acc(kr[c * p.k_dim]));
          s = masked_score<T>(p, o.mask, i, j, dot * p.scale);
        }
        float mx = s;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        const float m_new = fmaxf(m, mx);
        const float base = m_new == -INFINITY ? 0.f : m_new;  // all masked so far: keep exp() at 0, not NaN
        const float alpha = expf(m - base);
        const float e = expf(s - base);
        float sum = e;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        l = l * alpha + sum;
#pragma unroll
        for (int t = 0; t < kSimpleCols; ++t) acc[t] *= alpha;
        const int n = static_cast<int>(limit - j0 < 32 ? limit - j0 : 32);
        for (int jj = 0; jj < n; ++jj) {
          const float pj = __shfl_sync(0xffffffffu, e, jj);
          const T* vr = v + o.v + (j0 + jj) * p.v_row;
#pragma unroll
          for (int t = 0; t < kSimpleCols; ++t) {
            const int64_t c = c0 + lane + 32 * t;
            if (c < p.dv) acc[t] += pj * static_cast<float>(to_acc(vr[c]));
          }
        }
        m = m_new;
      }
      if (p.fill_finite && l == 0.f) {  // no key: the mean of V (l is the same in every lane)
        for (int64_t j = 0; j < p.skv; ++j) {
          const T* vr = v + o.v + j * p.v_row;
#pragma unroll
          for (int t = 0; t < kSimpleCols; ++t) {
            const int64_t c = c0 + lane + 32 * t;
            if (c < p.dv) acc[t] += static_cast<float>(to_acc(vr[c]));
          }
        }
        l = static_cast<float>(p.skv);
      }
      T* yr = y + o.y + i * p.y_row;
      const bool zero = p.nan_to_zero && !(l > 0.f);
#pragma unroll
      for (int t = 0; t < kSimpleCols; ++t) {
        const int64_t c = c0 + lane + 32 * t;
        if (c < p.dv) yr[c] = from_acc<T>(zero ? 0.f : acc[t] / l);
      }
    }
  }
}

// ----------------------------------------------------------------------------- launch

Params make_params(const CudaKernelContext& ctx, const ops::AttentionGeometry& g, const ops::AttentionAttrs& a) {
  Params p{};
  p.q = ctx.input(0).data;
  p.k = ctx.input(1).data;
  p.v = ctx.input(2).data;
  p.mask = g.mask == ops::AttentionMask::kNone ? nullptr : ctx.input(3).data;
  p.key_mask = g.key_mask_bytes ? ctx.input(4).data : nullptr;
  p.key_mask_bytes = g.key_mask_bytes;
  p.y = ctx.output(0).data;
  p.batch = g.batch;
  p.sq = g.sq, p.skv = g.skv, p.d = g.d, p.dv = g.dv;
  p.k_key = g.k_key, p.k_dim = g.k_dim;
  p.q_row = g.q_row, p.v_row = g.v_row, p.y_row = g.y_row;
  p.mask_row = g.mask_row, p.mask_col = g.mask_col;
  p.causal_offset = g.causal_offset();
  p.scale = a.scale;
  p.mask_fill = a.mask_fill;
  p.causal = a.causal ? 1 : 0;
  p.window = a.window;
  p.fill_finite = std::isfinite(a.mask_fill) ? 1 : 0;
  p.nan_to_zero = a.nan_to_zero ? 1 : 0;
  p.mask_kind = g.mask == ops::AttentionMask::kAdditive ? kAdditiveMask
                : g.mask == ops::AttentionMask::kBool   ? kBoolMask
                                                        : kNoMask;
  p.map = g.map;
  return p;
}

Status attention_cuda(CudaKernelContext& ctx) {
  const int64_t d = ctx.input(0).dims.empty() ? 0 : ctx.input(0).dims.back();
  SRT_ASSIGN_OR_RETURN(ops::AttentionAttrs a, ops::attention_attrs(ctx.node(), d));
  SRT_ASSIGN_OR_RETURN(ops::AttentionGeometry g, ops::attention_geometry(ctx, a));
  const ops::TensorRef& y = ctx.output(0);
  if (y.numel() == 0) return ok_status();
  if (g.skv == 0) {  // no keys: zeros, as the unfused P (empty) x V gives
    SRT_CUDA(cudaMemsetAsync(y.data, 0, y.nbytes(), ctx.stream()));
    return ok_status();
  }
  const Params p = make_params(ctx, g, a);
  return cuda_dispatch<ops::kFloats>(y.dtype, ctx.node().describe(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, float>) {
      const AttentionKernel choice = current_run_options().attention_kernel;
      if (choice == AttentionKernel::kAuto || choice == AttentionKernel::kWgmma) {
        SRT_ASSIGN_OR_RETURN(bool done, attention::launch_warpgroup<T>(ctx, p, choice == AttentionKernel::kWgmma));
        if (done) return ok_status();
      }
      if (choice != AttentionKernel::kSimple) {
        SRT_ASSIGN_OR_RETURN(bool done, attention::launch_tensor_core<T>(ctx, p));
        if (done) return ok_status();
      }
    }
    const int64_t rows = p.batch * p.sq;
    attention_simple<T><<<grid_for(rows * 32, kSimpleWarps * 32), kSimpleWarps * 32, 0, ctx.stream()>>>(p);
    SRT_CUDA_LAUNCH("attention_simple");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Attention, "Attention", attention_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
