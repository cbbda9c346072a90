// Attention on CUDA, mirroring src/ops/attention.cc (attributes and geometry come from
// ops::attention_attrs / ops::attention_geometry, the same code as the CPU kernel).
//
// Both kernels are flash-attention style: an online softmax over key tiles (running row max m,
// running sum l, output rescaled by exp(m_old - m_new)), so the [Sq, Skv] scores never reach
// global memory. Scores, softmax and accumulation are float; a row with no unmasked key ends with
// l = 0 and gives NaN, like the CPU kernel and the unfused Softmax.
//  - attention_mma (float16 / bfloat16, D == Dv in {64, 128}): a block of 4 warps takes 64 query
//    rows (16 per warp); key tiles of 64 rows of K and V go to shared memory through cp.async in
//    two stages (the next tile loads while the current one is computed); Q K^T and P V run on
//    tensor cores (mma.sync m16n8k16, float accumulators) with B fragments from ldmatrix (.trans
//    for V and for K^T staged as it lies). The S accumulator fragment is laid out exactly as the A
//    fragment of P V needs (rows g and g+8, columns 2t and 2t+1), so P never leaves registers
//    (rounded to the I/O type for the mma: the one rounding the CPU kernel does not make). The
//    softmax runs in log2 units (exp2). Causal blocks stop at the last key their last row may see,
//    sliding-window blocks start at the first key their first row may see, and only tiles that
//    cross a limit (causal, window, Skv, a mask, a key left out by key_mask) evaluate masks per
//    element. Each warp reads its tile's key_mask flags once, as two ballots (bit k = key k0 + k
//    takes part), and skips a tile without any key. K with other strides and unaligned K / V are
//    staged element by element.
//  - attention_simple (float32, and any other D / Dv): a warp per query row, lanes split keys
//    (32 at a time, from the row's causal / window bounds) for the scores and the Dv columns for
//    the output (256 columns per pass).
// A row left without a key of finite score ends with l = 0: NaN (0 with nan_to_zero) or, with a
// finite mask_fill, the mean of V over all keys, summed in a second pass by the rows that need it.
//    RuntimeOptions::attention_kernel = kSimple (streamrt run --attention-kernel simple) forces it
//    for every call.
#include <atomic>
#include <cmath>
#include <string>

#include "backends/cuda/cuda_run_options.h"
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/attention.h"

namespace streamrt::cuda {
namespace {

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
  int fill_finite;  // a row without keys averages V (see attention.h)
  int mask_kind;
  int nan_to_zero;  // a row whose softmax is NaN (l not > 0) is written as 0
  ops::AttentionBatchMap map;  // where each batch index starts in Q, K, V and the mask
};

using Offsets = ops::AttentionBatchMap::Offsets;

__device__ __forceinline__ ops::KeyBounds bounds(const Params& p, int64_t row) {
  return ops::key_bounds(row, p.causal_offset, p.skv, p.causal != 0, p.window);
}

// Whether key j of the key_mask row starting at element `row` is nonzero (any of its bytes: the
// integer types are nonzero alike whatever their sign).
__device__ __forceinline__ bool key_on(const Params& p, int64_t row, int64_t j) {
  const uint8_t* e = static_cast<const uint8_t*>(p.key_mask) + (row + j) * p.key_mask_bytes;
  uint8_t any = 0;
  for (int b = 0; b < p.key_mask_bytes; ++b) any |= e[b];
  return any != 0;
}

// Score of query i (< Sq) and key j (< Skv) after scale, causal limit, window and mask, as on the CPU.
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

// ----------------------------------------------------------------------------- tensor-core kernel

constexpr int kBr = 64;  // query rows per block (16 per warp)
constexpr int kBc = 64;  // keys per tile
constexpr int kMmaWarps = kBr / 16;
constexpr int kMmaThreads = kMmaWarps * 32;
constexpr float kLog2e = 1.4426950408889634f;

// Shared memory of one pipeline stage, in 16-bit elements: a K tile (key rows [key][dim], or K^T
// staged as it lies, [dim][key]) and a V tile ([key][dim]). Rows are padded by 8 elements so the
// 8 row addresses of an ldmatrix fall in 8 different 16-byte bank groups. Two stages: the next
// tile's copies run while the current one is computed.
template <int kD>
struct Smem {
  static constexpr int kRowLd = kD + 8;
  static constexpr int kTransLd = kBc + 8;
  static constexpr int kK = kBc * kRowLd > kD * kTransLd ? kBc * kRowLd : kD * kTransLd;
  static constexpr int kV = kBc * kRowLd;
  static constexpr int kStage = kK + kV;
  static constexpr size_t kBytes = 2 * kStage * sizeof(uint16_t);
};

// How K reaches shared memory: 16-byte copies of key rows, 16-byte copies of K^T rows (keys
// contiguous, as a Transpose [0,2,3,1] leaves them), or element by element (any strides).
enum KStaging : int { kKRows = 0, kKTrans = 1, kKScalar = 2 };

// D(16x8, f32) += A(16x16, row) * B(16x8, col) for float16 or bfloat16 A and B.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// Four 8x8 16-bit matrices; lanes 8i..8i+7 give the row addresses of matrix i. Without .trans a
// lane gets (row lane/4, columns 2(lane%4), +1) of each; with .trans (rows 2(lane%4), +1, column
// lane/4), which is the B fragment of mma.m16n8k16 when the rows run along N.
template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const uint16_t* p) {
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
// 16 bytes global -> shared without passing through registers; `valid` false writes zeros.
__device__ __forceinline__ void cp_async16(uint16_t* dst, const uint16_t* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
__device__ __forceinline__ float fast_exp2(float x) {  // exp2(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Two floats rounded to T, `lo` in the low 16 bits (the lower column / row of a fragment pair).
template <typename T>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  uint16_t a, b;
  if constexpr (std::is_same_v<T, __half>) {
    a = __half_as_ushort(__float2half_rn(lo));
    b = __half_as_ushort(__float2half_rn(hi));
  } else {
    a = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
    b = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  }
  return uint32_t(a) | (uint32_t(b) << 16);
}

__device__ __forceinline__ uint32_t load_pair(const uint16_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

template <typename T>
__device__ __forceinline__ float half_to_float(uint16_t x) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(x));
  else return __bfloat162float(__ushort_as_bfloat16(x));
}

// Keys [k0, k0 + kBc) of a [key][kD] source whose rows are `stride` elements apart and 16-byte
// aligned, into dst[kBc][kD + 8]; keys past Skv become zeros (their P is 0, and 0 * zeros stays
// 0 where 0 * stale shared memory could be NaN).
template <int kD>
__device__ __forceinline__ void stage_rows(uint16_t* dst, const uint16_t* src, int64_t k0, int64_t skv,
                                           int64_t stride) {
  constexpr int kChunks = kD / 8;
  for (int idx = threadIdx.x; idx < kBc * kChunks; idx += kMmaThreads) {
    const int r = idx / kChunks, c = idx % kChunks;
    const bool valid = k0 + r < skv;
    cp_async16(dst + r * Smem<kD>::kRowLd + c * 8, valid ? src + (k0 + r) * stride + c * 8 : src, valid);
  }
}
// K^T [kD][Skv] with dim rows `stride` elements apart (16-byte aligned): keys [k0, k0 + kBc) of
// every dim into dst[kD][kBc + 8]. A chunk that crosses Skv is copied element by element.
template <int kD>
__device__ __forceinline__ void stage_trans(uint16_t* dst, const uint16_t* src, int64_t k0, int64_t skv,
                                            int64_t stride) {
  constexpr int kChunks = kBc / 8;
  for (int idx = threadIdx.x; idx < kD * kChunks; idx += kMmaThreads) {
    const int r = idx / kChunks, c = idx % kChunks;
    const int64_t j = k0 + c * 8;
    uint16_t* d = dst + r * Smem<kD>::kTransLd + c * 8;
    if (j + 8 <= skv) {
      cp_async16(d, src + r * stride + j, true);
    } else {
      for (int e = 0; e < 8; ++e) d[e] = j + e < skv ? src[r * stride + j + e] : uint16_t(0);
    }
  }
}
// Any layout (element (j, c) at src[j * key_stride + c * dim_stride]) into dst[kBc][kD + 8];
// consecutive threads take consecutive keys.
template <int kD>
__device__ __forceinline__ void stage_scalar(uint16_t* dst, const uint16_t* src, int64_t k0, int64_t skv,
                                             int64_t key_stride, int64_t dim_stride) {
  for (int idx = threadIdx.x; idx < kBc * kD; idx += kMmaThreads) {
    const int r = idx % kBc, c = idx / kBc;
    dst[r * Smem<kD>::kRowLd + c] = k0 + r < skv ? src[(k0 + r) * key_stride + c * dim_stride] : uint16_t(0);
  }
}

// S (16 rows x 64 keys per warp) = Q K^T for one staged K tile.
template <typename T, int kD>
__device__ __forceinline__ void scores_tile(float (&s)[kBc / 8][4], const uint32_t (&qf)[kD / 16][4],
                                            const uint16_t* ks, bool trans) {
  const int lane = threadIdx.x % 32, mi = lane / 8, r = lane % 8;
#pragma unroll
  for (int nb = 0; nb < kBc / 8; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
  for (int kc = 0; kc < kD / 16; ++kc) {
#pragma unroll
    for (int nb = 0; nb < kBc / 8; nb += 2) {
      // Matrix mi: keys 8(nb + mi/2).., dims 16kc + 8(mi%2)..: registers {b0 b1} of block nb,
      // then of block nb + 1.
      const int key = (nb + mi / 2) * 8, dim = kc * 16 + (mi % 2) * 8;
      uint32_t b[4];
      if (trans) ldmatrix_x4<true>(b, ks + (dim + r) * Smem<kD>::kTransLd + key);
      else ldmatrix_x4<false>(b, ks + (key + r) * Smem<kD>::kRowLd + dim);
      mma_16816<T>(s[nb], qf[kc], b[0], b[1]);
      mma_16816<T>(s[nb + 1], qf[kc], b[2], b[3]);
    }
  }
}

// O += P V for one staged V tile; P's A fragment for keys [16kc, 16kc + 16) is S blocks 2kc and
// 2kc + 1 (the accumulator layout is the A layout).
template <typename T, int kD>
__device__ __forceinline__ void accumulate_tile(float (&acc)[kD / 8][4], const float (&s)[kBc / 8][4],
                                                const uint16_t* vs) {
  const int lane = threadIdx.x % 32, mi = lane / 8, r = lane % 8;
#pragma unroll
  for (int kc = 0; kc < kBc / 16; ++kc) {
    const uint32_t pa[4] = {pack_pair<T>(s[2 * kc][0], s[2 * kc][1]), pack_pair<T>(s[2 * kc][2], s[2 * kc][3]),
                            pack_pair<T>(s[2 * kc + 1][0], s[2 * kc + 1][1]),
                            pack_pair<T>(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
    for (int nb = 0; nb < kD / 8; nb += 2) {
      // Matrix mi: keys 16kc + 8(mi%2).., dims 8(nb + mi/2)..; transposed, rows run along N.
      uint32_t b[4];
      ldmatrix_x4<true>(b, vs + (kc * 16 + (mi % 2) * 8 + r) * Smem<kD>::kRowLd + (nb + mi / 2) * 8);
      mma_16816<T>(acc[nb], pa, b[0], b[1]);
      mma_16816<T>(acc[nb + 1], pa, b[2], b[3]);
    }
  }
}

template <typename T, int kD>
__global__ void __launch_bounds__(kMmaThreads) attention_mma(const Params p, int64_t q_tiles, int k_staging, bool v_vec) {
  extern __shared__ __align__(16) uint16_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t tile = q_tiles - 1 - static_cast<int64_t>(blockIdx.x) % q_tiles;  // long causal rows first
  const int64_t b = static_cast<int64_t>(blockIdx.x) / q_tiles;
  const Offsets o = p.map.offsets(b);
  const int64_t q0 = tile * kBr;
  const int64_t r0 = q0 + warp * 16 + g, r1 = r0 + 8;  // this thread's two rows
  const uint16_t* q = static_cast<const uint16_t*>(p.q) + o.q;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + o.k;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + o.v;
  // Batch offsets keep 16-byte alignment for the usual strides; where they do not, stage by elements.
  if (k_staging != kKScalar && reinterpret_cast<uintptr_t>(k) % 16 != 0) k_staging = kKScalar;
  v_vec = v_vec && reinterpret_cast<uintptr_t>(v) % 16 == 0;
  const bool k_trans = k_staging == kKTrans;

  // Q as A fragments for all of D, read once from global memory (rows past Sq are zeros).
  uint32_t qf[kD / 16][4];
#pragma unroll
  for (int kc = 0; kc < kD / 16; ++kc) {
    const int c = kc * 16 + 2 * t;
    qf[kc][0] = r0 < p.sq ? load_pair(q + r0 * p.q_row + c) : 0u;
    qf[kc][1] = r1 < p.sq ? load_pair(q + r1 * p.q_row + c) : 0u;
    qf[kc][2] = r0 < p.sq ? load_pair(q + r0 * p.q_row + c + 8) : 0u;
    qf[kc][3] = r1 < p.sq ? load_pair(q + r1 * p.q_row + c + 8) : 0u;
  }
  float acc[kD / 8][4];
#pragma unroll
  for (int nb = 0; nb < kD / 8; ++nb) acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.f;
  // Running max (in log2 units: scores are scaled by log2(e) so that exp2 replaces exp) and sums.
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  const float scale2 = p.scale * kLog2e;
  const int64_t last_row = (q0 + kBr < p.sq ? q0 + kBr : p.sq) - 1;
  // Keys any row of the block may see; the same for the whole block, so loops stay uniform.
  const int64_t kv_end = bounds(p, last_row).hi;
  const int64_t first_tile = bounds(p, q0).lo / kBc;  // tiles wholly before the window are skipped
  const int64_t n_tiles = (kv_end + kBc - 1) / kBc;

  auto stage = [&](int buf, int64_t k0) {
    uint16_t* ks = smem + buf * Smem<kD>::kStage;
    uint16_t* vs = ks + Smem<kD>::kK;
    if (k_staging == kKRows) stage_rows<kD>(ks, k, k0, p.skv, p.k_key);
    else if (k_staging == kKTrans) stage_trans<kD>(ks, k, k0, p.skv, p.k_dim);
    else stage_scalar<kD>(ks, k, k0, p.skv, p.k_key, p.k_dim);
    if (v_vec) stage_rows<kD>(vs, v, k0, p.skv, p.v_row);
    else stage_scalar<kD>(vs, v, k0, p.skv, p.v_row, 1);
    cp_async_commit();
  };
  if (first_tile < n_tiles) stage(0, first_tile * kBc);
  for (int64_t it = first_tile; it < n_tiles; ++it) {
    const int buf = static_cast<int>((it - first_tile) & 1);
    const int64_t k0 = it * kBc;
    // Bit k of on_lo / on_hi (keys k0 + k, k0 + 32 + k): the key exists and key_mask keeps it.
    uint32_t on_lo = ~0u, on_hi = ~0u;
    if (p.key_mask) {
      const int64_t j = k0 + lane;
      on_lo = __ballot_sync(0xffffffffu, j < p.skv && key_on(p, o.key_mask, j));
      on_hi = __ballot_sync(0xffffffffu, j + 32 < p.skv && key_on(p, o.key_mask, j + 32));
    }
    if (it + 1 < n_tiles) {  // the other stage was last read in the previous iteration, before its closing barrier
      stage(buf ^ 1, k0 + kBc);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    // A tile whose keys key_mask leaves out adds nothing to this warp's rows (both ballots are
    // the same in every lane, so the warp stays together for the mma).
    if (on_lo | on_hi) {
      const uint16_t* ks = smem + buf * Smem<kD>::kStage;
      float s[kBc / 8][4];
      scores_tile<T, kD>(s, qf, ks, k_trans);

      // Scale and masks; element e of block nb is row (e < 2 ? r0 : r1), key k0 + nb*8 + 2t + (e&1).
      // A tile inside every row's causal limit and window, inside Skv, without a mask and with every
      // key kept needs only the scale.
      const bool plain = p.mask_kind == kNoMask && k0 + kBc <= p.skv && (on_lo & on_hi) == ~0u &&
                         (!p.causal || k0 + kBc - 1 <= q0 + p.causal_offset) &&
                         (p.window == 0 || k0 > last_row + p.causal_offset - p.window);
      float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
      for (int nb = 0; nb < kBc / 8; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[nb][e] * scale2;
          if (!plain) {
            const int64_t i = e < 2 ? r0 : r1;
            const int kk = nb * 8 + 2 * t + (e & 1);
            const int64_t j = k0 + kk;
            const bool on = ((kk < 32 ? on_lo >> kk : on_hi >> (kk - 32)) & 1u) != 0;
            x = i < p.sq && j < p.skv && on ? masked_score<T>(p, o.mask, i, j, s[nb][e] * p.scale) * kLog2e : -INFINITY;
          }
          s[nb][e] = x;
          if (e < 2) mx0 = fmaxf(mx0, x);
          else mx1 = fmaxf(mx1, x);
        }
      }
      // The four lanes of a group (same g) hold one row between them.
#pragma unroll
      for (int off = 1; off <= 2; off <<= 1) {
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
      }
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
      const float base0 = mn0 == -INFINITY ? 0.f : mn0, base1 = mn1 == -INFINITY ? 0.f : mn1;
      const float alpha0 = fast_exp2(m0 - base0), alpha1 = fast_exp2(m1 - base1);
      m0 = mn0;
      m1 = mn1;
      float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
      for (int nb = 0; nb < kBc / 8; ++nb) {
        s[nb][0] = fast_exp2(s[nb][0] - base0);
        s[nb][1] = fast_exp2(s[nb][1] - base0);
        s[nb][2] = fast_exp2(s[nb][2] - base1);
        s[nb][3] = fast_exp2(s[nb][3] - base1);
        sum0 += s[nb][0] + s[nb][1];
        sum1 += s[nb][2] + s[nb][3];
      }
      l0 = l0 * alpha0 + sum0;  // this lane's columns only; the group's lanes are summed at the end
      l1 = l1 * alpha1 + sum1;
#pragma unroll
      for (int nb = 0; nb < kD / 8; ++nb) {
        acc[nb][0] *= alpha0;
        acc[nb][1] *= alpha0;
        acc[nb][2] *= alpha1;
        acc[nb][3] *= alpha1;
      }
      accumulate_tile<T, kD>(acc, s, ks + Smem<kD>::kK);
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  // A row without keys (l = 0: its acc is 0) with a finite fill: the mean of V over all keys.
  const bool mean0 = p.fill_finite && l0 == 0.f && r0 < p.sq, mean1 = p.fill_finite && l1 == 0.f && r1 < p.sq;
  if (mean0 || mean1) {
    for (int64_t j = 0; j < p.skv; ++j) {
      const uint16_t* vr = v + j * p.v_row;
#pragma unroll
      for (int nb = 0; nb < kD / 8; ++nb) {
        const int c = nb * 8 + 2 * t;
        const float x0 = half_to_float<T>(vr[c]), x1 = half_to_float<T>(vr[c + 1]);
        if (mean0) acc[nb][0] += x0, acc[nb][1] += x1;
        if (mean1) acc[nb][2] += x0, acc[nb][3] += x1;
      }
    }
    if (mean0) l0 = static_cast<float>(p.skv);
    if (mean1) l1 = static_cast<float>(p.skv);
  }
  // Column pairs (2t, 2t + 1) of a row are adjacent: one 4-byte store each (kD is even and Y's
  // rows start 4-byte aligned, as the launcher checks).
  uint16_t* y = static_cast<uint16_t*>(p.y) + o.y;
  // nan_to_zero: 0 * (1 / l) is 0 only for finite terms, so the row is selected instead.
  const bool zero0 = p.nan_to_zero && !(l0 > 0.f), zero1 = p.nan_to_zero && !(l1 > 0.f);
#pragma unroll
  for (int nb = 0; nb < kD / 8; ++nb) {
    const int c = nb * 8 + 2 * t;
    if (r0 < p.sq)
      *reinterpret_cast<uint32_t*>(y + r0 * p.y_row + c) =
          zero0 ? 0u : pack_pair<T>(acc[nb][0] / l0, acc[nb][1] / l0);
    if (r1 < p.sq)
      *reinterpret_cast<uint32_t*>(y + r1 * p.y_row + c) =
          zero1 ? 0u : pack_pair<T>(acc[nb][2] / l1, acc[nb][3] / l1);
  }
}

// ----------------------------------------------------------------------------- launch

bool aligned(const void* ptr, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

// RuntimeOptions::attention_kernel = kSimple sends every call to the warp-per-row kernel: a switch
// for telling the two kernels apart on a GPU without rebuilding (cuda_run_options.h says how the
// running context's options get here).
bool simple_only() { return current_run_options().attention_kernel == AttentionKernel::kSimple; }

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

// The kernel's shared memory (two stages) is above the default 48 KiB for D = 128: raise its
// limit once per device, before the first launch (an eager run precedes any graph capture).
template <typename T, int kD>
Status allow_mma_smem() {
  static std::atomic<uint64_t> done{0};  // bit per device
  int device = 0;
  SRT_CUDA(cudaGetDevice(&device));
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit && (done.load() & bit)) return ok_status();
  SRT_CUDA(cudaFuncSetAttribute(attention_mma<T, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(Smem<kD>::kBytes)));
  done.fetch_or(bit);
  return ok_status();
}

template <typename T, int kD>
Status launch_mma(CudaKernelContext& ctx, const Params& p, int64_t q_tiles) {
  SRT_RETURN_IF_ERROR((allow_mma_smem<T, kD>()));
  const int staging = p.k_dim == 1 && p.k_key % 8 == 0 && aligned(p.k, 16)   ? kKRows
                      : p.k_key == 1 && p.k_dim % 8 == 0 && aligned(p.k, 16) ? kKTrans
                                                                             : kKScalar;
  const bool v_vec = aligned(p.v, 16) && p.v_row % 8 == 0;
  attention_mma<T, kD><<<static_cast<unsigned>(p.batch * q_tiles), kMmaThreads, Smem<kD>::kBytes, ctx.stream()>>>(
      p, q_tiles, staging, v_vec);
  SRT_CUDA_LAUNCH("attention_mma");
  return ok_status();
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
      const int64_t q_tiles = (g.sq + kBr - 1) / kBr;
      // Tensor cores for the common head dims; Q is read in 4-byte pairs.
      if (!simple_only() && g.d == g.dv && aligned(p.q, 4) && aligned(p.y, 4) && p.batch * q_tiles <= INT32_MAX) {
        if (g.d == 64) return launch_mma<T, 64>(ctx, p, q_tiles);
        if (g.d == 128) return launch_mma<T, 128>(ctx, p, q_tiles);
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
