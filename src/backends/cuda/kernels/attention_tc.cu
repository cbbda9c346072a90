// The tensor-core Attention kernel (float16 / bfloat16, D == Dv in {64, 128, 256}), flash-attention
// style: an online softmax over key tiles (running row max m, running sum l, output rescaled by
// 2^(m_old - m_new)), so the [Sq, Skv] scores never reach global memory.
//  - A block of kWarps warps takes kBr = 16 * kWarps query rows (16 a warp). Its Q tile is staged in
//    shared memory once; key tiles of kBc keys of K and V follow through cp.async in two stages (the
//    next tile loads while the current one is computed). Q K^T and P V run on tensor cores
//    (mma.sync m16n8k16, float accumulators) with A fragments of Q and B fragments of K and V from
//    ldmatrix (.trans for V and for K^T staged as it lies). The S accumulator fragment is laid out
//    exactly as the A fragment of P V needs, so P never leaves registers (rounded to the I/O type
//    for the mma: the one rounding the CPU kernel does not make).
//  - Scores stay unscaled until the exponent: the row max is taken over raw scores and
//    p = 2^(s * scale * log2(e) - m) is one FFMA and one EX2 per score (scale > 0). Masks are written
//    into the raw scores (an additive mask as m / scale). Causal blocks stop at the last key their
//    last row may see and sliding-window blocks start at the first key their first row may see;
//    each warp reads a tile's key_mask flags once, as ballots, and skips a tile without a kept
//    key; only tiles that cross a limit (causal, window, Skv), leave a key out or carry a mask are
//    checked per element, and the variant without a mask input has no mask code (fewer registers).
//    A row left without keys under a finite mask_fill gets the mean of V (ops/attention.h).
//  - Grouped-query heads with fewer than kBr query rows (decode) share a block: row r of packed
//    batch bk is query r / group of batch index bk * group + r % group, so a K/V tile staged once
//    serves every query head that reads it.
//  - When the blocks would leave SMs idle (one row tile per packed batch and fewer blocks than
//    SMs: decode), the keys are split into ranges, one block each, that write their running max,
//    sum and unscaled output to the context's workspace; attention_combine joins them
//    (flash-decoding). The ranges start at the block's first tile (a sliding window's start).
//  - Blocks are numbered tile-major, the last row tile of every packed batch first, so the block
//    scheduler hands out the longest causal rows first and fills in with the short ones.
//  - Configurations: 4 warps (64 query rows) a block for every head size: D 64 three blocks an SM
//    (more rows a block, or fewer registers, measured slower on the H200), D 128 one block,
//    D 256 one block with 32-key tiles (101 KB of shared memory: not on sm_86 / sm_89). K and V
//    staged as 16-byte copies of key rows (the layout real exports give) is an instantiation of
//    its own, without the other layouts' code. A call no configuration takes (too little shared
//    memory, Sq or Skv beyond int range, scale <= 0) goes to the warp-per-row kernel in attention.cu.
#include <algorithm>
#include <atomic>

#include "backends/cuda/kernels/attention_splits.h"
#include "backends/cuda/kernels/attention_tile.cuh"
#include "backends/cuda/kernels/dependent_launch.cuh"
#include "backends/cuda/kernels/mma_util.cuh"

namespace streamrt::cuda::attention {
namespace {

template <int kD_, int kWarps_>
struct Cfg {
  static constexpr int kD = kD_;
  static constexpr int kWarps = kWarps_;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBr = 16 * kWarps;
  static constexpr int kBc = kD > 128 ? 32 : 64;
  static constexpr int kFlagWords = (kBc + 31) / 32;  // key_mask flags of a tile, 32 keys a word
  // Rows padded by 8 elements so the 8 row addresses of an ldmatrix fall in 8 different 16-byte
  // bank groups.
  static constexpr int kLd = kD + 8;
  static constexpr int kQ = kBr * kLd;
  static constexpr int kK = kBc * kLd;
  static constexpr int kV = kBc * kLd;
  static constexpr int kStage = kK + kV;
  static constexpr size_t kBytes = size_t(kQ + 2 * kStage) * sizeof(uint16_t);
  // D 64: three blocks an SM (170 registers a thread: the kernel needs about 150; a cap of 128
  // spilled); wider heads need more registers for their output fragments, so one block.
  static constexpr int kMinBlocks = kD == 64 ? 3 : 1;
};

// How K reaches shared memory: 16-byte copies of key rows, 16-byte copies of K^T rows (keys
// contiguous, as a Transpose [0,2,3,1] leaves them), or element by element (any strides).
enum KStaging : int { kKRows = 0, kKTrans = 1, kKScalar = 2 };

// Keys [k0, k0 + kBc) of a [key][kD] source whose rows are `stride` elements apart and 16-byte
// aligned, into dst[kBc][kLd]; keys past Skv become zeros (their P is 0, and 0 * zeros stays 0
// where 0 * stale shared memory could be NaN).
template <class C>
__device__ __forceinline__ void stage_rows(uint16_t* dst, const uint16_t* src, int k0, int skv, int64_t stride) {
  constexpr int kChunks = C::kD / 8;
  const uint16_t* base = src + static_cast<int64_t>(k0) * stride;
#pragma unroll
  for (int idx = threadIdx.x; idx < C::kBc * kChunks; idx += C::kThreads) {
    const int r = idx / kChunks, c = idx % kChunks;
    const bool valid = k0 + r < skv;
    cp_async16(dst + r * C::kLd + c * 8, valid ? base + r * stride + c * 8 : src, valid);
  }
}
// This thread's share of staging the key tiles, in order, of 16-byte key rows: one column and the
// rows srow, srow + kRowStep, ... of each tile, through a pointer that moves on a tile at a time
// (stage_rows works every address out per chunk: a third of the kernel's instructions at 2048
// tokens).
template <class C>
struct RowStager {
  static constexpr int kChunks = C::kD / 8;
  static constexpr int kRowStep = C::kThreads / kChunks;
  static constexpr int kPasses = C::kBc / kRowStep;
  static_assert(C::kThreads % kChunks == 0 && C::kBc % kRowStep == 0, "a tile is whole passes of the block");
  const uint16_t* next;  // this thread's column of key row srow of the next tile
  int64_t pass;          // kRowStep key rows, in elements
  int left;              // keys from this thread's first row of the next tile to Skv
  uint32_t dst;          // this thread's chunk in stage 0 (shared state space)

  __device__ __forceinline__ RowStager(const uint16_t* base, int64_t stride, uint32_t stage0, int k0, int skv) {
    const int srow = threadIdx.x / kChunks, col = (threadIdx.x % kChunks) * 8;
    next = base + (static_cast<int64_t>(k0) + srow) * stride + col;
    pass = kRowStep * stride;
    left = skv - k0 - srow;
    dst = stage0 + (srow * C::kLd + col) * 2;
  }
  // The next tile into the stage `stage_bytes` past stage 0; keys past Skv become zeros.
  __device__ __forceinline__ void stage_next(uint32_t stage_bytes) {
    const uint16_t* s = next;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const bool valid = i * kRowStep < left;
      cp_async16(dst + stage_bytes + i * kRowStep * C::kLd * 2, valid ? s : next, valid);
      s += pass;
    }
    next = s;
    left -= C::kBc;
  }
};

// K^T [kD][Skv] with dim rows `stride` elements apart (16-byte aligned): keys [k0, k0 + kBc) of
// every dim, transposed on the way into dst[kBc][kLd] like the other layouts (through registers:
// 16-byte loads, 2-byte stores), so the score loop has one shape.
template <class C>
__device__ __forceinline__ void stage_trans(uint16_t* dst, const uint16_t* src, int k0, int skv, int64_t stride) {
  constexpr int kChunks = C::kBc / 8;
#pragma unroll
  for (int idx = threadIdx.x; idx < C::kD * kChunks; idx += C::kThreads) {
    const int r = idx / kChunks, c = idx % kChunks;  // dim r, keys 8c..
    const int j = k0 + c * 8;
    alignas(16) uint16_t e8[8];
    if (j + 8 <= skv) {
      *reinterpret_cast<uint4*>(e8) = *reinterpret_cast<const uint4*>(src + r * stride + j);
    } else {
      for (int e = 0; e < 8; ++e) e8[e] = j + e < skv ? src[r * stride + j + e] : uint16_t(0);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) dst[(c * 8 + e) * C::kLd + r] = e8[e];
  }
}
// Any layout (element (j, c) at src[j * key_stride + c * dim_stride]) into dst[kBc][kLd];
// consecutive threads take consecutive keys.
template <class C>
__device__ __forceinline__ void stage_scalar(uint16_t* dst, const uint16_t* src, int k0, int skv,
                                             int64_t key_stride, int64_t dim_stride) {
  for (int idx = threadIdx.x; idx < C::kBc * C::kD; idx += C::kThreads) {
    const int r = idx % C::kBc, c = idx / C::kBc;
    dst[r * C::kLd + c] = k0 + r < skv ? src[(k0 + r) * key_stride + c * dim_stride] : uint16_t(0);
  }
}
// The block's kBr query rows into qs[kBr][kLd] (rows past the packed batch: zeros). Rows of one
// packed batch may come from different heads, so each row finds its own start.
template <class C>
__device__ __forceinline__ void stage_q(uint16_t* qs, const Params& p, const Offsets& base, int q0, bool vec) {
  constexpr int kChunks = C::kD / 8;
  const uint16_t* q = static_cast<const uint16_t*>(p.q);
  for (int idx = threadIdx.x; idx < C::kBr * kChunks; idx += C::kThreads) {
    const int r = idx / kChunks, c = idx % kChunks;
    uint16_t* d = qs + r * C::kLd + c * 8;
    const PackedRow row = packed_row(p, base, q0 + r);
    if (!row.valid) {
      *reinterpret_cast<uint4*>(d) = make_uint4(0, 0, 0, 0);
    } else if (vec) {
      cp_async16(d, q + row.q + c * 8, true);
    } else {
      for (int e = 0; e < 8; ++e) d[e] = q[row.q + c * 8 + e];
    }
  }
}

// S (16 rows x kBc keys for this warp) = Q K^T for one staged K tile; `qw` is the warp's Q rows.
template <typename T, class C>
__device__ __forceinline__ void scores_tile(float (&s)[C::kBc / 8][4], uint32_t qw, uint32_t ks) {
  const int lane = threadIdx.x % 32, mi = lane / 8, r = lane % 8;
  // This lane's row address in each ldmatrix: A rows lane % 16, dims +8 for lanes 16..31; B
  // matrix mi: keys +8(mi/2), dims +8(mi%2).
  const uint32_t qa = qw + ((lane % 16) * C::kLd + (lane / 16) * 8) * 2;
  const uint32_t ka = ks + (((mi / 2) * 8 + r) * C::kLd + (mi % 2) * 8) * 2;
#pragma unroll
  for (int nb = 0; nb < C::kBc / 8; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
  for (int kc = 0; kc < C::kD / 16; ++kc) {
    uint32_t a[4];
    ldmatrix_x4<false>(a, qa + kc * 32);
#pragma unroll
    for (int nb = 0; nb < C::kBc / 8; nb += 2) {
      // Registers {b0 b1}: keys of block nb, {b2 b3}: of block nb + 1; dims 16kc..16kc + 15.
      uint32_t b[4];
      ldmatrix_x4<false>(b, ka + (nb * 8 * C::kLd + kc * 16) * 2);
      mma_16816<T>(s[nb], a, b[0], b[1]);
      mma_16816<T>(s[nb + 1], a, b[2], b[3]);
    }
  }
}

// O += P V for one staged V tile; P's A fragment for keys [16kc, 16kc + 16) is S blocks 2kc and
// 2kc + 1 (the accumulator layout is the A layout).
template <typename T, class C>
__device__ __forceinline__ void accumulate_tile(float (&acc)[C::kD / 8][4], const float (&s)[C::kBc / 8][4],
                                                uint32_t vs) {
  const int lane = threadIdx.x % 32, mi = lane / 8, r = lane % 8;
  // Matrix mi: keys +8(mi%2), dims +8(mi/2); transposed, rows run along N.
  const uint32_t va = vs + (((mi % 2) * 8 + r) * C::kLd + (mi / 2) * 8) * 2;
#pragma unroll
  for (int kc = 0; kc < C::kBc / 16; ++kc) {
    const uint32_t pa[4] = {pack_pair<T>(s[2 * kc][0], s[2 * kc][1]), pack_pair<T>(s[2 * kc][2], s[2 * kc][3]),
                            pack_pair<T>(s[2 * kc + 1][0], s[2 * kc + 1][1]),
                            pack_pair<T>(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
    for (int nb = 0; nb < C::kD / 8; nb += 2) {
      uint32_t b[4];
      ldmatrix_x4<true>(b, va + (kc * 16 * C::kLd + nb * 8) * 2);
      mma_16816<T>(acc[nb], pa, b[0], b[1]);
      mma_16816<T>(acc[nb + 1], pa, b[2], b[3]);
    }
  }
}

// kRows: K and V are staged as 16-byte copies of key rows (the launcher checked every batch's
// alignment), the layout real exports give; the other instantiation picks a staging per block.
template <typename T, class C, bool kMasked, bool kRows>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    attention_tc(const Params p, int q_tiles, int k_staging, bool v_vec, bool q_vec) {
  constexpr int kD = C::kD;
  extern __shared__ __align__(16) uint16_t smem[];
  wait_for_earlier_steps();  // a dependent launch (dependent_launch.cuh): Q, K and V are earlier steps'
  dependents_may_start();    // after the wait: one launch ahead at most
  uint16_t* qs = smem;
  uint16_t* stages = smem + C::kQ;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // Blocks run tile-major, the last row tile (the longest causal rows) of every packed batch first:
  // the block scheduler then hands out the longest work first and fills in with short tiles.
  const int split = static_cast<int>(blockIdx.x % p.splits);
  const int rest = static_cast<int>(blockIdx.x / p.splits);
  const int64_t packed = gridDim.x / p.splits / q_tiles;
  const int tile = q_tiles - 1 - static_cast<int>(rest / packed);
  const int64_t bk = rest % packed;
  const int q0 = tile * C::kBr;                   // first packed row of the block
  const int r0 = q0 + warp * 16 + g, r1 = r0 + 8;  // this thread's two rows
  const int i0 = r0 / p.group, i1 = r1 / p.group;
  const bool v0 = r0 < p.rows, v1 = r1 < p.rows;
  // Warps whose 16 rows all lie past the packed batch (decode packs a few rows) only stage tiles.
  const bool active = q0 + warp * 16 < p.rows;
  const Offsets okv = p.map.offsets(bk * p.group);
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + okv.k;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + okv.v;
  if constexpr (!kRows) {
    // Batch offsets keep 16-byte alignment for the usual strides; where they do not, stage by elements.
    if (k_staging != kKScalar && reinterpret_cast<uintptr_t>(k) % 16 != 0) k_staging = kKScalar;
    v_vec = v_vec && reinterpret_cast<uintptr_t>(v) % 16 == 0;
  }
  TileRows rows{i0, i1, v0, v1, 0, 0};
  if constexpr (kMasked) {
    if (v0) rows.mask0 = packed_row(p, okv, r0).mask;
    if (v1) rows.mask1 = packed_row(p, okv, r1).mask;
  }

  const int skv = static_cast<int>(p.skv);
  const int first_i = q0 / p.group;
  const int last_i = ((q0 + C::kBr < p.rows ? q0 + C::kBr : p.rows) - 1) / p.group;
  const int kv_end = static_cast<int>(bounds(p, last_i).hi);  // same for the whole block: loops stay uniform
  const int all_tiles = (kv_end + C::kBc - 1) / C::kBc;
  // Tiles wholly before the block's first row's window add nothing; key range `split` of the rest.
  const int first_tile = static_cast<int>(bounds(p, first_i).lo / C::kBc);
  const TileRange range = split_range(first_tile, all_tiles, split, p.split_tiles);
  const int tile_begin = range.begin, tile_end = range.end;

  const uint32_t stages_addr = smem_addr(stages);
  RowStager<C> k_rows(k, p.k_key, stages_addr, tile_begin * C::kBc, skv);
  RowStager<C> v_rows(v, p.v_row, stages_addr + C::kK * 2, tile_begin * C::kBc, skv);
  auto stage = [&](int buf, int k0) {
    uint16_t* ks = stages + buf * C::kStage;
    uint16_t* vs = ks + C::kK;
    if constexpr (kRows) {
      k_rows.stage_next(buf * C::kStage * 2);  // tiles are staged in order: k0 is the next one
      v_rows.stage_next(buf * C::kStage * 2);
      cp_async_commit();
      return;
    }
    if (k_staging == kKRows) stage_rows<C>(ks, k, k0, skv, p.k_key);
    else if (k_staging == kKTrans) stage_trans<C>(ks, k, k0, skv, p.k_dim);
    else stage_scalar<C>(ks, k, k0, skv, p.k_key, p.k_dim);
    if (v_vec) stage_rows<C>(vs, v, k0, skv, p.v_row);
    else stage_scalar<C>(vs, v, k0, skv, p.v_row, 1);
    cp_async_commit();
  };
  stage_q<C>(qs, p, okv, q0, q_vec);  // in the first tile's copy group
  if (tile_begin < tile_end) stage(0, tile_begin * C::kBc);

  float acc[kD / 8][4];
#pragma unroll
  for (int nb = 0; nb < kD / 8; ++nb) acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.f;
  // Running max (log2 units of the scaled score) and sums of this thread's two rows.
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  const float scale2 = p.scale * kLog2e;
  const uint32_t qw = smem_addr(qs + warp * 16 * C::kLd);
  for (int it = tile_begin; it < tile_end; ++it) {
    const int buf = (it - tile_begin) & 1;
    const int k0 = it * C::kBc;
    if (it + 1 < tile_end) {  // the other stage was last read in the previous iteration, before its closing barrier
      stage(buf ^ 1, k0 + C::kBc);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const uint32_t ks = stages_addr + buf * C::kStage * 2;
    // key_mask's flags for this tile; a tile without a kept key adds nothing (uniform per warp).
    uint32_t on[C::kFlagWords];
    uint32_t any_on = ~0u, all_on = ~0u;
#pragma unroll
    for (int w = 0; w < C::kFlagWords; ++w) on[w] = ~0u;
    if (p.key_mask && active) {
      key_flags<C::kFlagWords>(p, okv.key_mask, k0, on);
      any_on = 0u;
#pragma unroll
      for (int w = 0; w < C::kFlagWords; ++w) any_on |= on[w], all_on &= on[w];
    }
    if (active && any_on) {
      float s[C::kBc / 8][4];
      scores_tile<T, C>(s, qw, ks);
      if (!plain_tile<kMasked, C::kBc>(p, k0, all_on, first_i, last_i)) mask_tile<T, kMasked>(p, rows, on, k0, s);
      softmax_step(s, acc, m0, m1, l0, l1, scale2);
      accumulate_tile<T, C>(acc, s, ks + C::kK * 2);
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  cp_async_wait<0>();  // Q's copies when the block had no key tile
  if (!active) return;
#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  if (p.splits > 1) {  // this key range's running max, sum and unscaled output; attention_combine finishes
    const int64_t stride = p.dv + 2;
    float* w0 = p.partial + ((bk * p.rows + r0) * p.splits + split) * stride;
    float* w1 = w0 + 8 * p.splits * stride;
#pragma unroll
    for (int nb = 0; nb < kD / 8; ++nb) {
      const int c = nb * 8 + 2 * t;
      if (v0) w0[c] = acc[nb][0], w0[c + 1] = acc[nb][1];
      if (v1) w1[c] = acc[nb][2], w1[c + 1] = acc[nb][3];
    }
    if (t == 0 && v0) w0[p.dv] = m0, w0[p.dv + 1] = l0;
    if (t == 0 && v1) w1[p.dv] = m1, w1[p.dv + 1] = l1;
    return;
  }
  store_rows<T, kD>(p, okv, r0, r1, v0, v1, acc, l0, l1, t);
}

// Joins the key ranges of a split launch: a warp per packed row rescales each range's output by
// 2^(m_s - M) (M the largest range max) and divides by the rescaled sum, as one pass would have.
// Lane s holds range s's (and s + 32's) weight, so the ranges' loads are independent of each other.
template <typename T>
__global__ void attention_combine(const Params p, int64_t packed_rows) {
  wait_for_earlier_steps();
  dependents_may_start();
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  const int64_t stride = p.dv + 2;
  for (int64_t pr = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32; pr < packed_rows; pr += warps) {
    const float* w = p.partial + pr * p.splits * stride;
    // Ranges lane and lane + 32 (splits <= 64).
    const float ma = lane < p.splits ? w[lane * stride + p.dv] : -INFINITY;
    const float mb = lane + 32 < p.splits ? w[(lane + 32) * stride + p.dv] : -INFINITY;
    float mx = fmaxf(ma, mb);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    const float base = mx == -INFINITY ? 0.f : mx;
    const float wa = fast_exp2(ma - base), wb = fast_exp2(mb - base);  // 0 for empty ranges
    float l = (lane < p.splits ? w[lane * stride + p.dv + 1] * wa : 0.f) +
              (lane + 32 < p.splits ? w[(lane + 32) * stride + p.dv + 1] * wb : 0.f);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
    const PackedRow row = packed_row(p, p.map.offsets((pr / p.rows) * p.group), static_cast<int>(pr % p.rows));
    T* y = static_cast<T*>(p.y) + row.y;
    if (p.fill_finite && l == 0.f) {  // no key under a finite fill: the mean of V
      const int64_t b = (pr / p.rows) * p.group + (pr % p.rows) % p.group;
      const T* v = static_cast<const T*>(p.v) + p.map.offsets(b).v;
      for (int64_t c = lane; c < p.dv; c += 32) {
        float a = 0.f;
        for (int64_t j = 0; j < p.skv; ++j) a += static_cast<float>(to_acc(v[j * p.v_row + c]));
        y[c] = from_acc<T>(a / static_cast<float>(p.skv));
      }
      continue;
    }
    const bool zero = p.nan_to_zero && !(l > 0.f);
    for (int64_t c0 = 0; c0 < p.dv; c0 += 32) {
      const int64_t c = c0 + lane;
      float a = 0.f;
      for (int s = 0; s < p.splits; ++s) {
        const float ws = __shfl_sync(0xffffffffu, s < 32 ? wa : wb, s % 32);
        if (c < p.dv) a += w[s * stride + c] * ws;
      }
      if (c < p.dv) y[c] = from_acc<T>(zero ? 0.f : a / l);
    }
  }
}

bool aligned(const void* ptr, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

template <typename T, class C, bool kMasked, bool kRows>
Status allow_smem() {
  return allow_dynamic_smem<attention_tc<T, C, kMasked, kRows>>(static_cast<int>(C::kBytes));
}

template <typename T, class C, bool kMasked, bool kRows>
Status launch(CudaKernelContext& ctx, const Params& p, int q_tiles, int64_t blocks, int staging, bool v_vec,
              bool q_vec) {
  SRT_RETURN_IF_ERROR((allow_smem<T, C, kMasked, kRows>()));
  return launch_dependent(ctx.resources(), attention_tc<T, C, kMasked, kRows>, dim3(static_cast<unsigned>(blocks)),
                          dim3(C::kThreads), C::kBytes, 1, p, q_tiles, staging, v_vec, q_vec);
}

template <typename T, class C, bool kMasked>
Status launch_staged(CudaKernelContext& ctx, const Params& p, int q_tiles, int64_t blocks, int staging, bool v_vec,
                     bool q_vec) {
  // Row staging for every batch when K and V rows are 16-byte runs and each batch's start stays
  // 16-byte aligned.
  bool rows = staging == kKRows && v_vec;
  for (int i = 0; i < p.map.rank; ++i) rows = rows && p.map.k[i] % 8 == 0 && p.map.v[i] % 8 == 0;
  if (rows) return launch<T, C, kMasked, true>(ctx, p, q_tiles, blocks, staging, v_vec, q_vec);
  return launch<T, C, kMasked, false>(ctx, p, q_tiles, blocks, staging, v_vec, q_vec);
}

template <typename T, class C>
Result<bool> launch_config(CudaKernelContext& ctx, Params p) {
  SRT_ASSIGN_OR_RETURN(const SmemLimits limits, smem_limits());
  const int optin = limits.block_optin;
  if (C::kBytes > static_cast<size_t>(optin)) return false;
  const int staging = p.k_dim == 1 && p.k_key % 8 == 0 && aligned(p.k, 16)   ? kKRows
                      : p.k_key == 1 && p.k_dim % 8 == 0 && aligned(p.k, 16) ? kKTrans
                                                                             : kKScalar;
  const bool v_vec = aligned(p.v, 16) && p.v_row % 8 == 0;
  bool q_vec = aligned(p.q, 16) && p.q_row % 8 == 0;
  for (int i = 0; i < p.map.rank; ++i) q_vec = q_vec && p.map.q[i] % 8 == 0;
  // Query heads of one K/V head share the block when each has fewer rows than the block holds.
  const int64_t group = p.map.kv_group > 1 && p.sq < C::kBr ? p.map.kv_group : 1;
  if (p.sq * group > INT32_MAX / 2) return false;
  p.group = static_cast<int>(group);
  p.rows = static_cast<int>(p.sq * group);
  const int64_t packed = p.batch / group;
  const int64_t q_tiles = (p.rows + C::kBr - 1) / C::kBr;
  const int64_t key_tiles = (p.skv + C::kBc - 1) / C::kBc;
  CudaResources& res = ctx.resources();
  // Keys are split only where one row tile holds a whole packed batch (decode): elsewhere the
  // combine pass costs more than the idle SMs (short prefills split as decode does measured twice as
  // slow: 2026-11-29, docs/benchmarks.md).
  const KeySplits ks =
      q_tiles == 1 ? plan_key_splits(packed, key_tiles, res.sm_count) : KeySplits{1, static_cast<int>(key_tiles)};
  p.splits = ks.splits;
  p.split_tiles = ks.split_tiles;
  const size_t partial_bytes = static_cast<size_t>(packed * p.rows * p.splits * (p.dv + 2)) * sizeof(float);
  // The partial results live in the context's workspace; never grow it here (a graph may be capturing).
  if (p.splits > 1 && partial_bytes > res.workspace_size) p.splits = 1, p.split_tiles = static_cast<int>(key_tiles);
  if (p.splits < 1) p.splits = 1;
  p.partial = static_cast<float*>(res.workspace);
  const int64_t blocks = packed * q_tiles * p.splits;
  if (blocks > INT32_MAX || blocks == 0) return false;
  if (p.mask_kind == kNoMask)
    SRT_RETURN_IF_ERROR(
        (launch_staged<T, C, false>(ctx, p, static_cast<int>(q_tiles), blocks, staging, v_vec, q_vec)));
  else
    SRT_RETURN_IF_ERROR((launch_staged<T, C, true>(ctx, p, static_cast<int>(q_tiles), blocks, staging, v_vec, q_vec)));
  if (p.splits > 1) {
    const int64_t rows = packed * p.rows;
    SRT_RETURN_IF_ERROR(
        launch_dependent(res, attention_combine<T>, dim3(grid_for(rows * 32, 256)), dim3(256), 0, 1, p, rows));
  }
  return true;
}

}  // namespace

template <typename T>
Result<bool> launch_tensor_core(CudaKernelContext& ctx, Params p) {
  // Q is read in 16-byte copies (or elements) and Y written in 4-byte pairs; indices are int32.
  if (p.d != p.dv || !(p.scale > 0.f) || !aligned(p.y, 4) || p.y_row % 2 != 0 || p.skv > INT32_MAX / 2)
    return false;
  for (int i = 0; i < p.map.rank; ++i)
    if (p.map.y[i] % 2 != 0) return false;
  if (p.d == 64) return launch_config<T, Cfg<64, 4>>(ctx, p);
  if (p.d == 128) return launch_config<T, Cfg<128, 4>>(ctx, p);
  if (p.d == 256) return launch_config<T, Cfg<256, 4>>(ctx, p);
  return false;
}

template Result<bool> launch_tensor_core<__half>(CudaKernelContext&, Params);
template Result<bool> launch_tensor_core<__nv_bfloat16>(CudaKernelContext&, Params);

}  // namespace streamrt::cuda::attention
