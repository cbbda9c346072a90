// What the CUDA Attention kernels share (attention.cu: the warp-per-row kernel and the launcher;
// attention_tc.cu: the tensor-core kernel): the launch parameters, passed by value, and the masking
// rules of src/ops/attention.cc.
#pragma once

#include <cmath>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/attention.h"

namespace streamrt::cuda::attention {

enum MaskKind : int { kNoMask = 0, kAdditiveMask = 1, kBoolMask = 2 };

// Everything a kernel needs, by value (no host memory outlives the launch).
struct Params {
  const void* q;
  const void* k;
  const void* v;
  const void* mask;
  const void* key_mask;  // [Bk, Sk] row-major, key_mask_bytes per element; null = none
  void* y;
  int64_t batch, sq, skv, d, dv;
  int64_t k_key, k_dim;        // K element (key j, dim c) at j * k_key + c * k_dim
  int64_t q_row, v_row, y_row;  // elements between consecutive rows of Q, V and Y
  int64_t mask_row, mask_col;  // mask strides along Sq and Skv
  int64_t causal_offset;       // Skv - Sq
  float scale;
  float mask_fill;  // score of a false bool-mask entry
  int causal;
  int64_t window;  // 0 = none
  int key_mask_bytes;
  int fill_finite;  // a row without keys averages V (see ops/attention.h)
  int mask_kind;
  int nan_to_zero;  // a row whose softmax is NaN (l not > 0) is written as 0
  ops::AttentionBatchMap map;  // where each batch index starts in Q, K, V and the mask
  // Tensor-core kernel only. Query heads that read one K/V head are packed into one block's rows,
  // so a K/V tile staged once serves all of them: packed batch bk covers batch indices
  // [bk * group, (bk + 1) * group), and its row r is query r / group of batch index bk * group + r % group.
  int group;
  int rows;         // rows of a packed batch: sq * group
  int splits;       // key ranges per block row tile (> 1: partial results, combined after)
  int split_tiles;  // key tiles per range
  float* partial;   // splits > 1: [packed batch][rows][splits][dv + 2] (acc..., max, sum)
};

using Offsets = ops::AttentionBatchMap::Offsets;

// The keys [lo, hi) query i may see under causal and window.
__device__ __forceinline__ ops::KeyBounds bounds(const Params& p, int64_t i) {
  return ops::key_bounds(i, p.causal_offset, p.skv, p.causal != 0, p.window);
}

// Whether key j of the key_mask row starting at element `row` is nonzero (bool or an integer type:
// one load of the element, which tensors keep aligned to its size; attention_mask is int64, and
// eight byte loads a key sat on the prefill kernels' critical path).
__device__ __forceinline__ bool key_on(const Params& p, int64_t row, int64_t j) {
  const uint8_t* e = static_cast<const uint8_t*>(p.key_mask) + (row + j) * p.key_mask_bytes;
  switch (p.key_mask_bytes) {
    case 8: return *reinterpret_cast<const uint64_t*>(e) != 0;
    case 4: return *reinterpret_cast<const uint32_t*>(e) != 0;
    case 2: return *reinterpret_cast<const uint16_t*>(e) != 0;
    default: return *e != 0;
  }
}

// Score of query i (< Sq) and key j (< Skv) after scale, causal limit, window and mask, as on the CPU
// (key_mask aside).
template <typename T>
__device__ __forceinline__ float masked_score(const Params& p, int64_t mask_base, int64_t i, int64_t j, float s) {
  const int64_t at = i + p.causal_offset;  // the query's position among the keys
  if ((p.causal && j > at) || (p.window > 0 && at - j >= p.window)) return -INFINITY;
  if (p.mask_kind == kNoMask) return s;
  const int64_t mo = mask_base + i * p.mask_row + j * p.mask_col;
  if (p.mask_kind == kAdditiveMask) {
    const float m = static_cast<float>(to_acc(static_cast<const T*>(p.mask)[mo]));
    return m <= ops::kMaskSwampsScore ? m : s + m;
  }
  return static_cast<const uint8_t*>(p.mask)[mo] ? s : p.mask_fill;
}

// One row of a packed batch (Params::group): its query index, and where it starts in Q, Y and the mask.
struct PackedRow {
  int i;
  bool valid;
  int64_t q, y, mask;
};
// `base` holds the offsets of the packed batch's first batch index (bk * group). A group's query
// heads are consecutive indices of the last leading dim (the group divides it), so head h starts h
// strides of that dim further: no division of 64-bit batch indices per row.
__device__ __forceinline__ PackedRow packed_row(const Params& p, const Offsets& base, int r) {
  PackedRow row{r / p.group, r < p.rows, 0, 0, 0};
  if (row.valid) {
    const int h = r - row.i * p.group;
    row.q = base.q + row.i * p.q_row;
    row.y = base.y + row.i * p.y_row;
    row.mask = base.mask;
    if (h != 0) {  // group > 1, so the map has a last leading dim
      const int last = p.map.rank - 1;
      row.q += h * p.map.q[last];
      row.y += h * p.map.y[last];
      row.mask += h * p.map.mask[last];
    }
  }
  return row;
}

}  // namespace streamrt::cuda::attention

namespace streamrt::cuda::attention {
// The tensor-core kernel for float16 / bfloat16 and head dims 64 / 128 / 256 (attention_tc.cu):
// false when it does not take this call (other dims, layouts it cannot stage, too little shared
// memory), and the warp-per-row kernel runs instead.
template <typename T>
Result<bool> launch_tensor_core(CudaKernelContext& ctx, Params p);
// The warpgroup-MMA kernel for prefill on sm_90 (attention_wgmma.cu): false where it does not take
// the call (another GPU, a build without sm_90a code, decode, layouts it cannot stage). any_length:
// also below the lengths where auto prefers attention_tc.cu (RuntimeOptions kWgmma, for A/B runs).
template <typename T>
Result<bool> launch_warpgroup(CudaKernelContext& ctx, Params p, bool any_length);
}  // namespace streamrt::cuda::attention
