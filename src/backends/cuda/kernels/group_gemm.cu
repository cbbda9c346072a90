// A MatMulGroup's products in one launch on sm_90a (group_gemm.h): warpgroup MMAs (wgmma) fed by
// TMA copies, the pipeline of attention_wgmma.cu without the softmax.
//  - A block is a producer warpgroup and two consumer warpgroups. One producer thread copies, per
//    64-wide step along K, the block's 128 rows of X and a 64 x 128 or 64 x 256 weight tile (one
//    weight's columns, or gate's and up's side by side) into a ring slot with a "full" mbarrier;
//    the consumers (64 rows each, 240 registers) issue one m64n128k16 / m64n256k16 MMA a 16-wide
//    K step with X K-major and the weight tile N-major straight from shared memory (one MMA
//    covers gate and up: X is read once for both), keep one step's MMAs in flight and hand the
//    slot before back through its "empty" mbarrier.
//  - Persistent blocks, one an SM: block b takes tiles b, b + grid, ... Its producer runs on into the
//    next tile's first steps while the consumers write the last tile out, so neither a block's start
//    nor its ring's filling sits between two tiles.
//  - Tiles run row tiles fastest: the blocks of one column tile read the same weight tile from L2
//    while it is hot, and X (a few MiB at prefill lengths) stays there.
//  - Tiles sit in shared memory in 128-byte-swizzled rows, as TMA's 128-byte swizzle writes them
//    and the MMA descriptors name (wgmma_layout.h). Rows past `rows`, columns past N and K past its
//    end arrive as zeros (the maps' bounds); the epilogue writes rows and columns inside only.
//  - The epilogue: a quad of lanes holds a row's 8-column block; four blocks at a time are transposed
//    across the quad so that each lane stores 16 bytes. Where a part has rotary tables (a folded
//    Rotary: Q and K), the heads are rotated in the accumulators first (rotate_tile).
// Keep every wgmma out of conditionals (attention_wgmma.cu says why; ctest
// cuda_wgmma_not_serialized checks this file too).
#include "backends/cuda/kernels/cuda_types.cuh"
#include "backends/cuda/kernels/group_gemm.h"
#include "backends/cuda/kernels/mma_util.cuh"
#include "backends/cuda/kernels/tma_pipeline.cuh"
#include "backends/cuda/kernels/wgmma.cuh"
#include "backends/cuda/kernels/wgmma_layout.h"
#include "backends/cuda/tma/tma_map.h"
#include "ops/fused_elementwise.h"

namespace streamrt::cuda {
namespace {

using wgmma::descriptor;

// A consumer's accumulator is 64 rows x kCols columns, one m64n<kCols>k16 MMA a 16-wide K step:
// kCols columns of one weight, or with kGate kCols / 2 of gate's and the same kCols / 2 of up's,
// side by side in shared memory so that one MMA reads both (the tile's output is then kCols / 2
// columns wide). kRot (64, 128; 0: none): the head size of the parts the epilogue rotates.
template <int kCols_, bool kGate_, int kRot_ = 0>
struct Cfg {
  static constexpr int kCols = kCols_;
  static constexpr bool kGate = kGate_;
  static constexpr int kRot = kRot_;
  static_assert(kRot == 0 || (!kGate && kCols % kRot == 0 && kRot % 16 == 0));
  static constexpr int kBm = 128, kBk = 64;
  static constexpr int kTileCols = kGate ? kCols / 2 : kCols;  // output columns a block
  static constexpr int kBlocks = kCols / 64;                     // 64-column blocks of a weight tile
  static constexpr int kThreads = 384;
  static constexpr uint32_t kXBytes = kBm * kBk * 2;
  static constexpr uint32_t kWBytes = kBk * kCols * 2;
  static constexpr uint32_t kStageBytes = kXBytes + kWBytes;
  static constexpr int kStages = (192 * 1024) / kStageBytes;  // 6 at 128 columns, 4 at 256
  static constexpr size_t kBytes = size_t{kStages} * kStageBytes + 1024 + 16 * kStages;
  // As attention_wgmma.cu's Cfg: the pool ptxas gives 384 threads (168 a thread), 24 for the producer.
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kThreads * 168);
};

struct Maps {
  CUtensorMap x;
  CUtensorMap w[3];
};

struct Params {
  int rows = 0, k_steps = 0, row_tiles = 0;
  int tiles = 0;  // row tiles x column tiles
  int tile_parts = 1;             // weights the column tiles run over (1 with the gate)
  std::array<int, 3> tile_end{};  // column tiles of parts 0..i
  std::array<int, 3> n{};
  std::array<const void*, 3> bias{};
  std::array<void*, 3> y{};
  std::array<const void*, 3> cos{}, sin{};  // rotary tables (null: the part is not rotated)
  std::array<int, 3> table_rows{};
};

// Tile t: its weight (part), first row and first column.
struct Tile {
  int part, row0, col0;
};
template <class C>
__device__ __forceinline__ Tile tile_of(const Params& p, int t) {
  const int rt = t % p.row_tiles, ct = t / p.row_tiles;
  int part = 0;
  while (part + 1 < p.tile_parts && ct >= p.tile_end[part]) ++part;
  return {part, rt * C::kBm, (ct - (part > 0 ? p.tile_end[part - 1] : 0)) * C::kTileCols};
}

// One tile's steps (slot and phase carry on from tile to tile).
template <class C>
__device__ __forceinline__ void produce_tile(const Maps& maps, int part, int row0, int col0, int k_steps,
                                             uint32_t ring, uint32_t full, uint32_t empty, int& slot, uint32_t& phase) {
  constexpr int kPerWeight = C::kGate ? C::kBlocks / 2 : C::kBlocks;
  for (int s = 0; s < k_steps; ++s) {
    tma::mbar_wait(empty + 8 * slot, phase ^ 1u);
    const uint32_t bar = full + 8 * slot, at = ring + slot * C::kStageBytes;
    tma::mbar_arrive_expect_tx(bar, C::kStageBytes);
    tma::load_2d(at, &maps.x, s * C::kBk, row0, bar);
#pragma unroll
    for (int cb = 0; cb < C::kBlocks; ++cb)
      tma::load_2d(at + C::kXBytes + cb * C::kBk * 128, &maps.w[part + cb / kPerWeight], col0 + (cb % kPerWeight) * 64,
                   s * C::kBk, bar);
    if (++slot == C::kStages) slot = 0, phase ^= 1u;
  }
}

// The producer's thread: for each of the block's tiles and each step along K, once the slot's
// readers are done, X's rows and the weight tile (64-column blocks side by side; with the gate,
// gate's then up's) into the next slot of the ring.
template <class C>
__device__ __forceinline__ void produce(const Maps& maps, const Params& p, uint32_t ring, uint32_t full,
                                        uint32_t empty) {
  int slot = 0;
  uint32_t phase = 0;
  for (int t = static_cast<int>(blockIdx.x); t < p.tiles; t += static_cast<int>(gridDim.x)) {
    const Tile tile = tile_of<C>(p, t);
    produce_tile<C>(maps, tile.part, tile.row0, tile.col0, p.k_steps, ring, full, empty, slot, phase);
  }
}

template <typename T>
__device__ __forceinline__ float rounded(float v) {
  return to_acc(from_acc<T>(v));
}

// A thread's rotary table values for a tile (rows r0 and r0 + 8, the quad's columns of each of a head's
// first-half column blocks jj): cos and sin pairs at the column and D / 2 after it. Loaded when the tile
// starts, so that their latency hides behind its MMAs instead of lengthening the epilogue.
template <class C>
struct Tables {
  static constexpr int kBlocks = C::kRot > 0 ? C::kRot / 16 : 1;  // first-half column blocks of a head
  uint32_t c1[2][kBlocks], c2[2][kBlocks], s1[2][kBlocks], s2[2][kBlocks];
};

template <class C>
__device__ __forceinline__ void load_tables(const Params& p, int part, int r0, Tables<C>& t) {
  const int quad = static_cast<int>(threadIdx.x % 4);
  const uint32_t* cos = static_cast<const uint32_t*>(p.cos[part]);
  const uint32_t* sin = static_cast<const uint32_t*>(p.sin[part]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = static_cast<int64_t>((r0 + 8 * h) % p.table_rows[part]) * C::kRot;
#pragma unroll
    for (int jj = 0; jj < C::kRot / 16; ++jj) {
      const int64_t at = (row + 8 * jj + 2 * quad) / 2;  // in pairs
      t.c1[h][jj] = __ldg(cos + at), t.c2[h][jj] = __ldg(cos + at + C::kRot / 4);
      t.s1[h][jj] = __ldg(sin + at), t.s2[h][jj] = __ldg(sin + at + C::kRot / 4);
    }
  }
}

template <typename T>
__device__ __forceinline__ float pair_half(uint32_t v, int e) {
  T pair[2];
  *reinterpret_cast<uint32_t*>(pair) = v;
  return to_acc(pair[e]);
}

// Rotates a part's heads in the accumulators (Rotary's arithmetic, kernels/rotary.cu), after adding
// the bias and rounding each product as the unfused GEMM would; store_tile then rounds once more (a
// no-op for those values' type) without the bias. A head's first-half column block jj pairs with
// jj + kRot / 16 in the same thread: kRot divides the tile.
template <typename T, class C>
__device__ __forceinline__ void rotate_tile(const Params& p, int part, int col0, const Tables<C>& t,
                                            float (&acc)[C::kCols / 2]) {
  constexpr int kHalfBlocks = C::kRot / 16, kHeadBlocks = C::kRot / 8;
  const int quad = static_cast<int>(threadIdx.x % 4), n = p.n[part];
  const T* bias = static_cast<const T*>(p.bias[part]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int jj = 0; jj < kHalfBlocks; ++jj) {
#pragma unroll
      for (int hb = 0; hb < C::kTileCols / C::kRot; ++hb) {
        const int j1 = hb * kHeadBlocks + jj, j2 = j1 + kHalfBlocks;
        const int c = col0 + 8 * j1 + 2 * quad;  // heads lie inside n or outside it (n % kRot == 0)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float b1 = bias && c < n ? to_acc(bias[c + e]) : 0.f;
          const float b2 = bias && c < n ? to_acc(bias[c + C::kRot / 2 + e]) : 0.f;
          const float a = rounded<T>(acc[4 * j1 + 2 * h + e] + b1), b = rounded<T>(acc[4 * j2 + 2 * h + e] + b2);
          acc[4 * j1 + 2 * h + e] = a * pair_half<T>(t.c1[h][jj], e) - b * pair_half<T>(t.s1[h][jj], e);
          acc[4 * j2 + 2 * h + e] = b * pair_half<T>(t.c2[h][jj], e) + a * pair_half<T>(t.s2[h][jj], e);
        }
      }
    }
  }
}

// Lane i of each quad holds row i of a 4 x 4 matrix of 32-bit pairs; afterwards it holds column i
// (two exchanges across the quad: the off-diagonal 2 x 2 blocks, then within each block).
__device__ __forceinline__ void quad_transpose(uint32_t (&m)[4], int i) {
  const bool hi = (i & 2) != 0, odd = (i & 1) != 0;
  uint32_t s0 = __shfl_xor_sync(0xffffffffu, hi ? m[0] : m[2], 2);
  uint32_t s1 = __shfl_xor_sync(0xffffffffu, hi ? m[1] : m[3], 2);
  if (hi) m[0] = s0, m[1] = s1;
  else m[2] = s0, m[3] = s1;
  s0 = __shfl_xor_sync(0xffffffffu, odd ? m[0] : m[1], 1);
  s1 = __shfl_xor_sync(0xffffffffu, odd ? m[2] : m[3], 1);
  if (odd) m[0] = s0, m[2] = s1;
  else m[1] = s0, m[3] = s1;
}

// A consumer's 64 rows to memory. The fragment layout of m64nNk16 gives a lane rows warp * 16 +
// lane / 4 and 8 below it, columns 8 j + 2 (lane % 4) and the next: a quad holds a row's 8-column
// block j. Four blocks at a time are transposed across the quad so that each lane writes a whole
// block, 16 bytes (a pair a store where y is not 16-byte aligned; n is a multiple of 8, so a block
// lies inside or outside n). With the gate, column block j of gate pairs with j + kTileCols / 8 of up.
template <typename T, class C>
__device__ __forceinline__ void store_tile(const Params& p, int part, int r0, int col0, const float (&acc)[C::kCols / 2],
                                           bool biased) {
  const int quad = static_cast<int>(threadIdx.x % 4);
  const int n = p.n[part];
  T* y = static_cast<T*>(p.y[part]);
  const bool wide = reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const T* bias0 = biased ? nullptr : static_cast<const T*>(p.bias[part]);
  const T* bias1 = C::kGate ? static_cast<const T*>(p.bias[1]) : nullptr;
  constexpr int kUp = C::kTileCols / 2;  // acc index of up's column block 0 (4 floats a block of 8)
#pragma unroll
  for (int g = 0; g < C::kTileCols / 32; ++g) {
    uint32_t out[2][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int j = 4 * g + i, c = col0 + 8 * j + 2 * quad;
      float b0[2] = {0.f, 0.f}, b1[2] = {0.f, 0.f};
      if (bias0 && c < n) b0[0] = to_acc(bias0[c]), b0[1] = to_acc(bias0[c + 1]);
      if (C::kGate && bias1 && c < n) b1[0] = to_acc(bias1[c]), b1[1] = to_acc(bias1[c + 1]);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          v[e] = rounded<T>(acc[4 * j + 2 * h + e] + b0[e]);
          if constexpr (C::kGate) v[e] = ops::fused::gate_value(v[e], rounded<T>(acc[kUp + 4 * j + 2 * h + e] + b1[e]));
        }
        T pair[2] = {from_acc<T>(v[0]), from_acc<T>(v[1])};
        out[h][i] = *reinterpret_cast<const uint32_t*>(pair);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + 8 * h;
      if (wide) {  // the same for the whole launch: every lane shuffles
        quad_transpose(out[h], quad);
        const int c = col0 + 8 * (4 * g + quad);
        if (r < p.rows && c < n)
          *reinterpret_cast<uint4*>(y + static_cast<int64_t>(r) * n + c) =
              make_uint4(out[h][0], out[h][1], out[h][2], out[h][3]);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int c = col0 + 8 * (4 * g + i) + 2 * quad;
          if (r < p.rows && c < n) *reinterpret_cast<uint32_t*>(y + static_cast<int64_t>(r) * n + c) = out[h][i];
        }
      }
    }
  }
}

template <typename T, class C>
__global__ void __launch_bounds__(C::kThreads, 1) group_gemm_kernel(const __grid_constant__ Maps maps,
                                                                        const __grid_constant__ Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  const uint32_t ring = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t full = ring + C::kStages * C::kStageBytes, empty = full + 8 * C::kStages;
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  if (threadIdx.x == 0) {
    for (int i = 0; i < C::kStages; ++i) {
      tma::mbar_init(full + 8 * i, 1);
      tma::mbar_init(empty + 8 * i, 8);  // a lane of each consumer warp
    }
    tma::mbar_init_fence();
  }
  __syncthreads();
  if (wg == 0) {
    tma::regs_decrease<C::kProducerRegs>();
    if (threadIdx.x == 0) produce<C>(maps, p, ring, full, empty);
    return;
  }
  tma::regs_increase<C::kConsumerRegs>();
  const int cw = wg - 1, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  float acc[C::kCols / 2];
#pragma unroll
  for (int i = 0; i < C::kCols / 2; ++i) acc[i] = 0.f;
  const uint64_t xd = descriptor(ring + cw * 64 * 128, 16, 1024);
  const uint64_t wd = descriptor(ring + C::kXBytes, C::kBk * 128, 1024);
  int slot = 0;
  uint32_t phase = 0;
  for (int t = static_cast<int>(blockIdx.x); t < p.tiles; t += static_cast<int>(gridDim.x)) {
    const Tile tile = tile_of<C>(p, t);
    const int r0 = tile.row0 + cw * 64 + warp * 16 + lane / 4;
    Tables<C> tables;
    const bool rotate = C::kRot > 0 && p.cos[tile.part] != nullptr;
    if constexpr (C::kRot > 0) {
      if (rotate) load_tables<C>(p, tile.part, r0, tables);
    }
    int prev = 0;
    for (int s = 0; s < p.k_steps; ++s) {
      tma::mbar_wait(full + 8 * slot, phase);
      const uint32_t at = slot * C::kStageBytes;
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < C::kBk / 16; ++kk)  // a tile's first MMA overwrites the accumulators
        wgmma::ss_nb<T, C::kCols>(acc, xd + ((at + kk * 32) >> 4), wd + ((at + kk * 16 * 128) >> 4), s > 0 || kk > 0);
      wgmma::commit();
      wgmma::wait<1>();  // the step before is done: its slot goes back
      wgmma::fence_regs(acc);
      if (s > 0) {
        __syncwarp();
        if (lane == 0) tma::mbar_arrive(empty + 8 * prev);
      }
      prev = slot;
      if (++slot == C::kStages) slot = 0, phase ^= 1u;
    }
    wgmma::wait<0>();
    wgmma::fence_regs(acc);
    __syncwarp();
    if (lane == 0) tma::mbar_arrive(empty + 8 * prev);  // the producer fills it for the next tile meanwhile
    if constexpr (C::kRot > 0) {
      if (rotate) rotate_tile<T, C>(p, tile.part, tile.col0, tables, acc);
    }
    store_tile<T, C>(p, tile.part, r0, tile.col0, acc, rotate);
  }
#else
  __trap();
#endif
}

// X [rows, k] or a weight [k, n] as a TMA map of 64-element (128-byte) box rows.
Result<CUtensorMap> map_2d(const void* base, int64_t inner, int64_t outer, uint32_t box_outer) {
  tma::TiledMap16 m;
  m.base = base;
  m.rank = 2;
  m.dims[0] = static_cast<uint64_t>(inner), m.dims[1] = static_cast<uint64_t>(outer);
  m.strides[1] = static_cast<uint64_t>(inner);
  m.box[0] = 64, m.box[1] = box_outer;
  return tma::encode_swizzled_128(m);
}

template <typename T, class C>
Status launch(const GroupGemm& g, int sm_count, cudaStream_t stream) {
  SRT_ASSIGN_OR_RETURN(const SmemLimits limits, smem_limits());
  if (C::kBytes > static_cast<size_t>(limits.block_optin)) return unsupported("group GEMM: shared memory too small");
  Maps maps{};
  SRT_ASSIGN_OR_RETURN(maps.x, map_2d(g.x, g.k, g.rows, C::kBm));
  Params p;
  p.rows = static_cast<int>(g.rows);
  p.k_steps = static_cast<int>((g.k + C::kBk - 1) / C::kBk);
  p.row_tiles = static_cast<int>((g.rows + C::kBm - 1) / C::kBm);
  p.tile_parts = g.gate ? 1 : g.parts;
  int tiles = 0;
  for (int i = 0; i < g.parts; ++i) {
    const auto& part = g.part[static_cast<size_t>(i)];
    SRT_ASSIGN_OR_RETURN(maps.w[i], map_2d(part.w, part.n, g.k, C::kBk));
    p.n[static_cast<size_t>(i)] = static_cast<int>(part.n);
    p.bias[static_cast<size_t>(i)] = part.bias;
    p.y[static_cast<size_t>(i)] = part.y;
    p.cos[static_cast<size_t>(i)] = part.cos;
    p.sin[static_cast<size_t>(i)] = part.sin;
    p.table_rows[static_cast<size_t>(i)] = static_cast<int>(part.table_rows);
    if (i < p.tile_parts) tiles += static_cast<int>((part.n + C::kTileCols - 1) / C::kTileCols);
    p.tile_end[static_cast<size_t>(i)] = tiles;
  }
  const int64_t all = int64_t{p.row_tiles} * tiles;
  if (all > INT32_MAX) return unsupported("group GEMM: too many tiles");
  p.tiles = static_cast<int>(all);
  const int64_t blocks = sm_count > 0 ? std::min<int64_t>(all, sm_count) : all;  // one block an SM
  SRT_RETURN_IF_ERROR((allow_dynamic_smem<group_gemm_kernel<T, C>>(static_cast<int>(C::kBytes))));
  group_gemm_kernel<T, C><<<static_cast<unsigned>(blocks), C::kThreads, C::kBytes, stream>>>(maps, p);
  SRT_CUDA_LAUNCH("group_gemm_kernel");
  return ok_status();
}

template <typename T>
Status launch_cols(const GroupGemm& g, int cols, int sm, cudaStream_t stream) {
  if (g.gate) return cols == 128 ? launch<T, Cfg<128, true>>(g, sm, stream) : launch<T, Cfg<256, true>>(g, sm, stream);
  const bool rot = g.part[0].cos || g.part[1].cos;
  if (rot && g.rotary_dim == 64)
    return cols == 128 ? launch<T, Cfg<128, false, 64>>(g, sm, stream) : launch<T, Cfg<256, false, 64>>(g, sm, stream);
  if (rot) return launch<T, Cfg<128, false, 128>>(g, sm, stream);  // group_gemm_applies: 128 columns
  return cols == 128 ? launch<T, Cfg<128, false>>(g, sm, stream) : launch<T, Cfg<256, false>>(g, sm, stream);
}

}  // namespace

int group_gemm_default_cols(const GroupGemm& g, const CudaResources& res) {
  if (g.gate) return 256;
  if (g.rotary_dim == 128 && (g.part[0].cos || g.part[1].cos)) return 128;  // the width that rotates them
  // 256 columns where every weight fills such tiles and they still make a wave of blocks.
  int64_t blocks = 0;
  for (int i = 0; i < g.parts; ++i) {
    if (g.part[static_cast<size_t>(i)].n % 256 != 0) return 128;
    blocks += (g.rows + 127) / 128 * (g.part[static_cast<size_t>(i)].n / 256);
  }
  return blocks >= 2 * std::max(res.sm_count, 1) ? 256 : 128;
}

bool group_gemm_applies(const GroupGemm& g, const CudaResources& res) {
  if (res.cc_major != 9 || res.cc_minor != 0) return false;  // sm_90a code runs there only
  if (g.dtype != DataType::kFloat16 && g.dtype != DataType::kBFloat16) return false;
  if (g.parts < 1 || g.parts > 3 || (g.gate && g.parts != 2)) return false;
  // TMA: 16-byte aligned bases and row strides; int indexing of elements and tiles.
  if (g.rows < 1 || g.rows > (int64_t{1} << 24) || g.k < 8 || g.k % 8 != 0 || g.k > (int64_t{1} << 20)) return false;
  if (!aligned16(g.x)) return false;
  for (int i = 0; i < g.parts; ++i) {
    const auto& p = g.part[static_cast<size_t>(i)];
    if (!p.w || !aligned16(p.w) || p.n < 8 || p.n % 8 != 0 || p.n > (int64_t{1} << 20)) return false;
    if (g.rows * p.n > INT32_MAX) return false;
    if ((i == 0 || !g.gate) && (!p.y || reinterpret_cast<uintptr_t>(p.y) % 4 != 0)) return false;
    if (p.bias && reinterpret_cast<uintptr_t>(p.bias) % 4 != 0) return false;
  }
  if (g.cols != 0 && g.cols != 128 && g.cols != 256) return false;
  for (int i = 0; i < g.parts; ++i) {
    const auto& p = g.part[static_cast<size_t>(i)];
    if (!p.cos && !p.sin) continue;
    // Heads of 64 or 128 whole in a tile, tables read as pairs. Heads of 128 with 256 columns would
    // hold 192 of a consumer's registers in accumulators and tables: not taken.
    const int cols = g.cols != 0 ? g.cols : group_gemm_default_cols(g, res);
    if (g.gate || i >= 2 || !p.cos || !p.sin || (g.rotary_dim != 64 && g.rotary_dim != 128) || p.n % g.rotary_dim != 0 ||
        (g.rotary_dim == 128 && cols != 128) ||
        p.table_rows < 1 || p.table_rows > INT32_MAX || reinterpret_cast<uintptr_t>(p.cos) % 4 != 0 ||
        reinterpret_cast<uintptr_t>(p.sin) % 4 != 0)
      return false;
  }
  return !g.gate || g.part[0].n == g.part[1].n;
}

Status group_gemm(const GroupGemm& g, const CudaResources& res, cudaStream_t stream) {
  if (!group_gemm_applies(g, res)) return unsupported("the group GEMM does not take these operands");
  const int cols = g.cols != 0 ? g.cols : group_gemm_default_cols(g, res);
  if (g.dtype == DataType::kFloat16) return launch_cols<__half>(g, cols, res.sm_count, stream);
  return launch_cols<__nv_bfloat16>(g, cols, res.sm_count, stream);
}

}  // namespace streamrt::cuda
