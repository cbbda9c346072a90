// Device helpers of the tensor-core Attention kernels (attention_tc.cu: mma.sync on sm_80 and
// later; attention_wgmma.cu: warpgroup MMA on sm_90a): score masking in the kernels' raw-score
// units, key_mask flags, the exp2 of the online softmax, fragment packing and the output rows.
#pragma once

#include "backends/cuda/kernels/attention_common.cuh"

namespace streamrt::cuda::attention {

constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float fast_exp2(float x) {  // exp2(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Two floats rounded to T, `lo` in the low 16 bits (the lower column / row of a fragment pair).
template <typename T>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// The raw score `s` of (query i, key j) with the masks applied: -inf where the key is out of reach
// (past Skv, causal, window, left out by key_mask: `on` false), else a value that scale * log2(e)
// turns into the masked score's log2 units.
template <typename T, bool kMasked>
__device__ __forceinline__ float mask_raw(const Params& p, int64_t mask_base, bool row_valid, int i, int j, bool on,
                                          float s, float inv_scale) {
  const int64_t at = i + p.causal_offset;
  if (!row_valid || !on || j >= p.skv || (p.causal && j > at) || (p.window > 0 && at - j >= p.window)) return -INFINITY;
  if constexpr (kMasked) {
    const int64_t mo = mask_base + i * p.mask_row + j * p.mask_col;
    if (p.mask_kind == kAdditiveMask) {
      const float m = static_cast<float>(to_acc(static_cast<const T*>(p.mask)[mo]));
      return m <= ops::kMaskSwampsScore ? m * inv_scale : s + m * inv_scale;
    }
    return static_cast<const uint8_t*>(p.mask)[mo] ? s : p.mask_fill * inv_scale;
  }
  return s;
}

// A lane's keys j, j + 32, ... of the key_mask row: all loads issued before any is used, so a tile
// waits for one memory latency, not one per word.
template <typename E, int kWords>
__device__ __forceinline__ void key_words(const Params& p, int64_t row, int j, bool (&kept)[kWords]) {
  const E* e = static_cast<const E*>(p.key_mask) + row;
  E v[kWords];
#pragma unroll
  for (int w = 0; w < kWords; ++w) v[w] = j + 32 * w < p.skv ? e[j + 32 * w] : E(0);
#pragma unroll
  for (int w = 0; w < kWords; ++w) kept[w] = v[w] != E(0);
}

// Bit k % 32 of word k / 32: key k0 + k exists and key_mask keeps it. Every lane of the warp gets
// the same words.
template <int kWords>
__device__ __forceinline__ void key_flags(const Params& p, int64_t row, int k0, uint32_t (&on)[kWords]) {
  const int j = k0 + threadIdx.x % 32;
  bool kept[kWords];
  switch (p.key_mask_bytes) {  // bool or an integer type: nonzero keeps the key (key_on)
    case 8: key_words<uint64_t>(p, row, j, kept); break;
    case 4: key_words<uint32_t>(p, row, j, kept); break;
    case 2: key_words<uint16_t>(p, row, j, kept); break;
    default: key_words<uint8_t>(p, row, j, kept); break;
  }
#pragma unroll
  for (int w = 0; w < kWords; ++w) on[w] = __ballot_sync(0xffffffffu, kept[w]);
}

// The mean of V over all Skv keys for columns c, c + 1 (a row whose every key the unfused graph
// filled with the same finite score: its softmax is uniform).
template <typename T>
__device__ __forceinline__ void mean_of_v(const Params& p, const uint16_t* v, int c, float& a, float& b) {
  a = b = 0.f;
  for (int64_t j = 0; j < p.skv; ++j) {
    const T* vr = reinterpret_cast<const T*>(v + j * p.v_row);
    a += static_cast<float>(to_acc(vr[c]));
    b += static_cast<float>(to_acc(vr[c + 1]));
  }
  a /= static_cast<float>(p.skv);
  b /= static_cast<float>(p.skv);
}

// The two rows of a score tile a thread holds in the m16n8 accumulator layout (block nb, element e:
// row e < 2 ? 0 : 1, key nb * 8 + 2t + (e & 1)) and what masking them needs.
struct TileRows {
  int i0, i1;             // query indices
  bool v0, v1;            // rows inside the packed batch
  int64_t mask0, mask1;   // where their mask rows start
};

// Whether a tile of kBc keys from k0 needs no masking at all: inside every row's causal limit and
// window and inside Skv, every key kept (all_on) and no mask input.
template <bool kMasked, int kBc>
__device__ __forceinline__ bool plain_tile(const Params& p, int k0, uint32_t all_on, int first_i, int last_i) {
  return !kMasked && k0 + kBc <= p.skv && all_on == ~0u && (!p.causal || k0 + kBc - 1 <= first_i + p.causal_offset) &&
         (p.window == 0 || k0 > last_i + p.causal_offset - p.window);
}

// The keys [lo, hi] of a tile of kBc keys from k0 (tile-local, inclusive; none when hi < lo) that
// query i sees under its causal limit, its window and Skv (mask_raw's rules, key_mask aside).
struct RowReach {
  int lo, hi;
};
template <int kBc>
__device__ __forceinline__ RowReach row_reach(const Params& p, bool valid, int i, int k0) {
  if (!valid) return {0, -1};
  const int64_t at = i + p.causal_offset;
  int64_t hi = p.skv - 1 - k0, lo = 0;
  if (p.causal && at - k0 < hi) hi = at - k0;
  if (p.window > 0 && at - p.window + 1 - k0 > lo) lo = at - p.window + 1 - k0;
  return {static_cast<int>(lo < kBc ? lo : kBc), static_cast<int>(hi < -1 ? -1 : (hi < kBc ? hi : kBc - 1))};
}

// Masks a raw score tile in place (`on`: the tile's key_mask flags). Without a mask input each row's
// reach is a range of the tile (row_reach, once a row) and a key's test is two compares and its
// flag bit: mask_raw's 64-bit tests a key cost the diagonal tiles of causal prefill several times a
// plain tile's softmax. With a mask input, mask_raw for every element.
template <typename T, bool kMasked, int kNb, int kWords>
__device__ __forceinline__ void mask_tile(const Params& p, const TileRows& rows, const uint32_t (&on)[kWords], int k0,
                                          float (&s)[kNb][4]) {
  const int t = threadIdx.x % 4;
  if constexpr (!kMasked) {
    constexpr int kBc = kNb * 8;
    const RowReach r0 = row_reach<kBc>(p, rows.v0, rows.i0, k0), r1 = row_reach<kBc>(p, rows.v1, rows.i1, k0);
#pragma unroll
    for (int nb = 0; nb < kNb; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int kk = nb * 8 + 2 * t + (e & 1);
        const RowReach& r = e < 2 ? r0 : r1;
        const bool kept = kk >= r.lo && kk <= r.hi && ((on[kk / 32] >> (kk % 32)) & 1u) != 0;
        s[nb][e] = kept ? s[nb][e] : -INFINITY;
      }
  } else {
    const float inv_scale = 1.f / p.scale;
#pragma unroll
    for (int nb = 0; nb < kNb; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int kk = nb * 8 + 2 * t + (e & 1);
        const bool kept = ((on[kk / 32] >> (kk % 32)) & 1u) != 0;
        s[nb][e] = mask_raw<T, kMasked>(p, e < 2 ? rows.mask0 : rows.mask1, e < 2 ? rows.v0 : rows.v1,
                                        e < 2 ? rows.i0 : rows.i1, k0 + kk, kept, s[nb][e], inv_scale);
      }
  }
}

// The score half of an online-softmax step over a masked raw score tile: the rows' new max (the
// four lanes of a row share it), the scores turned into 2^(s * scale2 - max) in place and the sums l
// (this lane's columns only: the lanes are summed at the end). Returns in alpha0 / alpha1 what the
// output rows are to be multiplied by (rescale_rows); the Hopper kernel does that once the P V MMA
// still reading O has finished. m is in log2 units of the scaled score; a row without a finite
// score so far keeps exp() at 0, not NaN.
template <int kNb>
__device__ __forceinline__ void softmax_scores(float (&s)[kNb][4], float& m0, float& m1, float& l0, float& l1,
                                               float scale2, float& alpha0, float& alpha1) {
  float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
  for (int nb = 0; nb < kNb; ++nb) {
    mx0 = fmaxf(mx0, fmaxf(s[nb][0], s[nb][1]));
    mx1 = fmaxf(mx1, fmaxf(s[nb][2], s[nb][3]));
  }
#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
  }
  const float mn0 = fmaxf(m0, mx0 * scale2), mn1 = fmaxf(m1, mx1 * scale2);
  const float base0 = mn0 == -INFINITY ? 0.f : mn0, base1 = mn1 == -INFINITY ? 0.f : mn1;
  alpha0 = fast_exp2(m0 - base0);
  alpha1 = fast_exp2(m1 - base1);
  m0 = mn0;
  m1 = mn1;
  float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
  for (int nb = 0; nb < kNb; ++nb) {
    s[nb][0] = fast_exp2(fmaf(s[nb][0], scale2, -base0));
    s[nb][1] = fast_exp2(fmaf(s[nb][1], scale2, -base0));
    s[nb][2] = fast_exp2(fmaf(s[nb][2], scale2, -base1));
    s[nb][3] = fast_exp2(fmaf(s[nb][3], scale2, -base1));
    sum0 += s[nb][0] + s[nb][1];
    sum1 += s[nb][2] + s[nb][3];
  }
  l0 = l0 * alpha0 + sum0;
  l1 = l1 * alpha1 + sum1;
}

// The output rows of a thread (m16n8 accumulator layout) times their rows' alpha.
template <int kDb>
__device__ __forceinline__ void rescale_rows(float (&o)[kDb][4], float alpha0, float alpha1) {
#pragma unroll
  for (int nb = 0; nb < kDb; ++nb) {
    o[nb][0] *= alpha0;
    o[nb][1] *= alpha0;
    o[nb][2] *= alpha1;
    o[nb][3] *= alpha1;
  }
}

// One online-softmax step: softmax_scores, then the output rows rescaled.
template <int kNb, int kDb>
__device__ __forceinline__ void softmax_step(float (&s)[kNb][4], float (&o)[kDb][4], float& m0, float& m1, float& l0,
                                             float& l1, float scale2) {
  float alpha0, alpha1;
  softmax_scores(s, m0, m1, l0, l1, scale2, alpha0, alpha1);
  rescale_rows(o, alpha0, alpha1);
}

// Writes this thread's two rows r0 / r1 (valid v0 / v1) of a finished tile: O / l rounded to T, the
// mean of V for a row left without keys under a finite fill, zeros for nan_to_zero. `acc` is the
// m16n8 accumulator layout (block nb: columns nb * 8 + 2t, +1 of rows r0 and r1); l0 / l1 are the
// rows' full sums. Column pairs are adjacent: one 4-byte store each (the launcher checked Y's
// alignment).
template <typename T, int kD>
__device__ __forceinline__ void store_rows(const Params& p, const Offsets& okv, int r0, int r1, bool v0, bool v1,
                                           float (&acc)[kD / 8][4], float l0, float l1, int t) {
  const bool mean0 = p.fill_finite && v0 && l0 == 0.f, mean1 = p.fill_finite && v1 && l1 == 0.f;
  if (mean0 || mean1) {
    const uint16_t* v = static_cast<const uint16_t*>(p.v) + okv.v;
#pragma unroll
    for (int nb = 0; nb < kD / 8; ++nb) {
      float a, b;
      mean_of_v<T>(p, v, nb * 8 + 2 * t, a, b);
      if (mean0) acc[nb][0] = a, acc[nb][1] = b;
      if (mean1) acc[nb][2] = a, acc[nb][3] = b;
    }
    if (mean0) l0 = 1.f;
    if (mean1) l1 = 1.f;
  }
  uint16_t* y = static_cast<uint16_t*>(p.y);
  const int64_t y0 = v0 ? packed_row(p, okv, r0).y : 0, y1 = v1 ? packed_row(p, okv, r1).y : 0;
  // nan_to_zero: 0 * (1 / l) is 0 only for finite terms, so the row is selected instead.
  const bool zero0 = p.nan_to_zero && !(l0 > 0.f), zero1 = p.nan_to_zero && !(l1 > 0.f);
  const float inv0 = 1.f / l0, inv1 = 1.f / l1;
#pragma unroll
  for (int nb = 0; nb < kD / 8; ++nb) {
    const int c = nb * 8 + 2 * t;
    if (v0) *reinterpret_cast<uint32_t*>(y + y0 + c) = zero0 ? 0u : pack_pair<T>(acc[nb][0] * inv0, acc[nb][1] * inv0);
    if (v1) *reinterpret_cast<uint32_t*>(y + y1 + c) = zero1 ? 0u : pack_pair<T>(acc[nb][2] * inv1, acc[nb][3] * inv1);
  }
}

}  // namespace streamrt::cuda::attention
