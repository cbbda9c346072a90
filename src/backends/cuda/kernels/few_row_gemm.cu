// Two to eight rows of A times float16 / bfloat16 weights in ONNX's K x N layout (half_gemv.h's
// products when a batch of decode tokens, or a short prompt, has a few rows): the weight is read
// once, so the time is the weight's bytes over the memory bandwidth, and what matters is how many
// bytes are in flight.
//  - A block owns 64, 128 or 256 output columns of one weight (128- to 512-byte runs of each
//    weight row) and a chunk of K. Its weight tile streams through a ring of 8 KiB shared-memory
//    stages by cp.async (the copies need no registers, so many blocks share an SM), swizzled so
//    the ldmatrix reads are free of bank conflicts.
//  - Tensor cores multiply: mma.sync m16n8k16 with the weight as the A operand (16 output columns
//    of W^T through ldmatrix .trans) and A's rows as the B operand (n = 8 rows, padded with zeros),
//    float accumulators. Each of the 4 warps owns a quarter of the block's columns.
//  - K is split over the blocks of a thread-block cluster (sm_90), up to 8 (choose_shape says how
//    far); the blocks add their partial sums through distributed shared memory,
//    each block finishing a slice of the outputs: one launch, no workspace.
//  - MatMulGroup's forms: up to three weights in one launch (the grid runs through every weight's
//    column tiles), A RMS-normalized as it is staged (the cluster adds the chunks' sums of squares),
//    SwiGLU's gate (a block reads its columns of both weights, one after the other), bias and a
//    residual in the epilogue.

#include <algorithm>
#include <optional>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "backends/cuda/kernels/half_gemv.h"
#include "backends/cuda/kernels/mma_util.cuh"
#include "backends/cuda/kernels/small_product.cuh"

namespace streamrt::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kRows = 8;                      // rows of A at most (mma's n)
constexpr int kMaxSlots = 12;                 // ring stages a block at most
constexpr int kStageBytes = 8192;             // a ring stage: kStageRows<kC> weight rows of kC columns
constexpr int kPieces = kStageBytes / 16 / kThreads;  // 16-byte copies a thread a stage
// kC output columns a block (64, 128 or 256: 128- to 512-byte runs of each weight row; kC / 4 a
// warp), so a stage holds kStageRows<kC> weight rows.
template <int kC>
constexpr int kStageRows = kStageBytes / (kC * 2);

template <typename T>
using Args = ProductArgs<T>;

// The shared memory of a block: the ring, A's rows of the chunk (padded by 8 elements so the 8
// row addresses of an ldmatrix fall in different bank groups), the partial sums the cluster adds.
struct Smem {
  __host__ __device__ static int x_ld(int chunk) { return chunk + 8; }
  static size_t rest(int chunk, int cols) {
    return size_t(kRows) * x_ld(chunk) * 2 + 2 * size_t(cols) * kRows * sizeof(float) + 2 * kRows * sizeof(float);
  }
  static size_t bytes(int chunk, int cols, int slots) { return size_t(slots) * kStageBytes + rest(chunk, cols); }
};

// cp.async.wait_group takes a constant: up to n of the latest groups may still be in flight.
__device__ __forceinline__ void wait_pending(int n) {
  switch (n) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    case 3: cp_async_wait<3>(); break;
    case 4: cp_async_wait<4>(); break;
    case 5: cp_async_wait<5>(); break;
    case 6: cp_async_wait<6>(); break;
    case 7: cp_async_wait<7>(); break;
    case 8: cp_async_wait<8>(); break;
    case 9: cp_async_wait<9>(); break;
    case 10: cp_async_wait<10>(); break;
    default: cp_async_wait<11>(); break;
  }
}

// Stage `t` of the block's weight rows [k0, k0 + len) (columns col0.., n wide) into ring slot s %
// slots. Row r's 16-byte piece c goes to piece c ^ (r % 8) of its row (128 to 512 bytes): the 8
// rows one ldmatrix matrix reads land in 8 different bank groups. Pieces past the chunk or N read
// nothing and store zeros (stale shared memory times a zero row of A could be NaN).
template <int kC, typename T>
__device__ __forceinline__ void issue_stage(const T* w, int64_t n, int64_t k0, int len, int64_t col0, int t,
                                            uint8_t* slot) {
  constexpr int kRowPieces = kC / 8;
#pragma unroll
  for (int i = 0; i < kPieces; ++i) {
    const int p = threadIdx.x + i * kThreads;
    const int r = p / kRowPieces, c = p % kRowPieces;
    const int kr = t * kStageRows<kC> + r;
    const int64_t col = col0 + c * 8;
    const bool valid = kr < len && col < n;
    const T* src = valid ? w + (k0 + kr) * n + col : w;
    cp_async16(smem_addr(slot + r * (kC * 2) + ((c ^ (r & 7)) * 16)), src, valid);
  }
}

// A's rows [0, rows) of columns [k0, k0 + len) into xs[kRows][ld] by cp.async, zeros past them
// up to `padded` columns: the first group of copies a block issues, so A lands before the
// weight's stages queued behind it (every thread's copies at once: no chain of load latencies).
template <typename T>
__device__ __forceinline__ void stage_a(const Args<T>& p, int64_t k0, int len, int padded, T* xs, int ld) {
  const int per_row = padded / 8;
  for (int i = threadIdx.x; i < kRows * per_row; i += kThreads) {
    const int r = i / per_row, c = i % per_row;
    const bool valid = r < p.rows && c * 8 < len;
    cp_async16(smem_addr(xs + r * ld + c * 8), valid ? p.a + r * p.k + k0 + c * 8 : p.a, valid);
  }
  cp_async_commit();
}

// Each row's sum of squares over the staged chunk, into ss[kRows] (a warp a row at a time).
template <typename T>
__device__ __forceinline__ void sum_squares(const T* xs, int ld, int len, float* ss) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = warp; r < kRows; r += kWarps) {
    float sum = 0.f;
    for (int c = lane; c < len; c += 32) {
      const float x = static_cast<float>(to_acc(xs[r * ld + c]));
      sum += x * x;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) ss[r] = sum;
  }
}

// The cluster's sums of squares of every row (each block summed its chunk), then A's staged rows
// normalized as RMSNormalization's kernel rounds them.
template <typename T>
__device__ __forceinline__ void normalize_a(const Args<T>& p, int64_t k0, int len, T* xs, int ld, float* ss,
                                            float* inv) {
  if (threadIdx.x < kRows) {
    float total = ss[threadIdx.x];
    for (int r = 0; r < p.split; ++r)
      if (r != static_cast<int>(blockIdx.y)) total += split_peer(ss, r)[threadIdx.x];
    inv[threadIdx.x] = rsqrtf(total / static_cast<float>(p.k) + p.eps);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < len; c += kThreads) {
    const float scale = static_cast<float>(to_acc(p.scale[k0 + c]));
    for (int r = 0; r < p.rows; ++r) {
      T& x = xs[r * ld + c];
      x = from_acc<T>(static_cast<float>(to_acc(x)) * inv[r] * scale);
    }
  }
}

// One stage's products: the warp's kC / 4 columns (kC / 64 tiles of 16) times the 8 rows over the
// stage's weight rows.
template <int kC, typename T>
__device__ __forceinline__ void compute_stage(const uint8_t* slot, const T* xs, int ld, int kx,
                                              float (&acc)[kC / 64][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // ldmatrix .trans of W: matrix i = lanes 8i..8i+7: columns +8 for odd i, rows +8 for i >= 2.
  const int mat = lane / 8, r_in = lane % 8;
  // The B operand: A's rows 0..7 (lanes 0..7: keys +0, lanes 8..15: keys +8).
  const uint32_t xaddr = smem_addr(xs + (lane % 8) * ld + kx + ((lane / 8) & 1) * 8);
#pragma unroll
  for (int kk = 0; kk < kStageRows<kC>; kk += 16) {
    const int r = kk + (mat >> 1) * 8 + r_in;
    uint32_t b[2];
    ldmatrix_x2(b, xaddr + kk * 2);
#pragma unroll
    for (int m = 0; m < kC / 64; ++m) {
      const int piece = (warp * (kC / 4) + m * 16) / 8 + (mat & 1);
      uint32_t a[4];
      ldmatrix_x4<true>(a, smem_addr(slot + r * (kC * 2) + ((piece ^ (r & 7)) * 16)));
      mma_16816<T>(acc[m], a, b[0], b[1]);
    }
  }
}

// Where a stage's weight rows come from: stage s of `stages` a weight reads weight s / stages (the
// gate's block reads its columns of both weights, one after the other, through one ring).
template <int kC, typename T>
struct Source {
  const T* w[2];
  int64_t n, k0, col0;
  int len, stages, total;
  int slots;  // ring stages: at least 2, at most total (+1) and kMaxSlots
  __device__ __forceinline__ void issue(int s, uint8_t* ring) const {
    if (s < total)
      issue_stage<kC>(s < stages ? w[0] : w[1], n, k0, len, col0, s % stages, ring + (s % slots) * kStageBytes);
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  }
};

// The warp's accumulators (per tile m: columns lane / 4, +8 of its 16; rows 2 (lane % 4), +1) into
// part[kRows][kC] (row-major, as the outputs are written).
template <int kC>
__device__ __forceinline__ void store_sums(const float (&acc)[kC / 64][4], float* part) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = (lane % 4) * 2;
#pragma unroll
  for (int m = 0; m < kC / 64; ++m) {
    const int c = warp * (kC / 4) + m * 16 + lane / 4;
    part[r * kC + c] = acc[m][0];
    part[(r + 1) * kC + c] = acc[m][1];
    part[r * kC + c + 8] = acc[m][2];
    part[(r + 1) * kC + c + 8] = acc[m][3];
  }
}

// The block's sums over the ring: the first slots - 1 stages were issued by the caller.
template <int kC, typename T>
__device__ __forceinline__ void block_sums(const Source<kC, T>& src, uint8_t* ring, const T* xs, int ld, float* part) {
  float acc[2][kC / 64][4] = {};
  for (int s = 0; s < src.total; ++s) {
    wait_pending(src.slots - 2);
    __syncthreads();  // stage s landed for every thread; slot (s - 1) % slots is read by none
    src.issue(s + src.slots - 1, ring);
    const uint8_t* slot = ring + (s % src.slots) * kStageBytes;
    const int kx = (s % src.stages) * kStageRows<kC>;
    if (s < src.stages) compute_stage<kC, T>(slot, xs, ld, kx, acc[0]);
    else compute_stage<kC, T>(slot, xs, ld, kx, acc[1]);
  }
  cp_async_wait<0>();
  store_sums<kC>(acc[0], part);
  if (src.total > src.stages) store_sums<kC>(acc[1], part + kC * kRows);
}

// Grid: (column tiles of every weight, split); with split > 1 a cluster is (1, split, 1), so
// blockIdx.y is the block's rank in it.
template <int kC, typename T>
__global__ void __launch_bounds__(kThreads) few_row_gemm_kernel(const Args<T> p) {
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* ring = smem;
  const int ld = Smem::x_ld(p.chunk);
  T* xs = reinterpret_cast<T*>(ring + p.slots * kStageBytes);
  float* part = reinterpret_cast<float*>(xs + kRows * ld);  // [2][kRows][kC]
  float* ss = part + 2 * kC * kRows;                        // [kRows]
  float* inv = ss + kRows;                                  // [kRows]
  int q = 0;
  while (q + 1 < p.parts && !p.gate && blockIdx.x >= p.tile_end[q]) ++q;
  Source<kC, T> src;
  src.w[0] = p.w[q];
  src.w[1] = p.gate ? p.w[1] : p.w[q];
  src.n = p.n[q];
  src.col0 = (blockIdx.x - (q > 0 ? p.tile_end[q - 1] : 0)) * kC;
  src.k0 = static_cast<int64_t>(blockIdx.y) * p.chunk;
  src.len = static_cast<int>(src.k0 < p.k ? min(static_cast<int64_t>(p.chunk), p.k - src.k0) : 0);
  src.stages = max(1, (src.len + kStageRows<kC> - 1) / kStageRows<kC>);
  src.total = src.stages * (p.gate ? 2 : 1);
  src.slots = p.slots;

  // A (after the earlier steps' writes: a no-op wait in the usual launch launch() makes), then the
  // first weight stages, all in flight at once; A is normalized while the weight's copies go on.
  wait_for_earlier_steps();
  stage_a(p, src.k0, src.len, src.stages * kStageRows<kC>, xs, ld);
  for (int s = 0; s < src.slots - 1; ++s) src.issue(s, ring);
  if (p.scale) {
    wait_pending(src.slots - 1);  // A's group
    __syncthreads();
    sum_squares(xs, ld, src.len, ss);
    if (p.split > 1) split_sync();  // every block's sums of squares are in place
    __syncthreads();
    normalize_a(p, src.k0, src.len, xs, ld, ss, inv);
    __syncthreads();
  }
  block_sums(src, ring, xs, ld, part);
  dependents_may_start();  // the next step scheduled in this one's tail (dependent_launch.cuh: why not sooner)

  // Each block of the cluster finishes a slice of the outputs, adding every block's sums (the
  // slices are disjoint: a block overwrites only sums no other block reads).
  const int sums = p.gate ? 2 : 1;
  constexpr int kOut = kC * kRows;
  const bool rotated = p.cos[q] != nullptr;
  int first = 0, count = kOut;
  if (p.split > 1) {
    split_sync();
    // Rotated: whole rows a slice, so a column's pair (the same row) is this block's too.
    count = rotated ? (kRows + p.split - 1) / p.split * kC : (kOut + p.split - 1) / p.split;
    first = static_cast<int>(blockIdx.y) * count;
    count = max(0, min(count, kOut - first));
    for (int i = threadIdx.x; i < sums * count; i += kThreads) {
      const int idx = (i / count) * kOut + first + i % count;
      float v[kMaxSplit];  // every block's sum loaded before any is added: one round trip
#pragma unroll
      for (int r = 0; r < kMaxSplit; ++r) v[r] = r < p.split ? split_peer(part, r)[idx] : 0.f;
      float s = 0.f;
#pragma unroll
      for (int r = 0; r < kMaxSplit; ++r) s += v[r];
      part[idx] = s;
    }
    split_sync();  // the others' sums stay until every block has read them
  } else {
    __syncthreads();
  }
  // This block's slice of the outputs: consecutive threads write consecutive columns of a row.
  const int64_t n = src.n;
  if (rotated) {  // every value as stored first (in place: no other block reads this slice now), then the pairs
    for (int i = threadIdx.x; i < count; i += kThreads) {
      const int idx = first + i, row = idx / kC;
      const int64_t col = src.col0 + idx % kC;
      if (row < p.rows && col < n) part[idx] = rotated_input(p, q, col, part[idx]);
    }
    __syncthreads();
    const int h = p.rotary_dim / 2;  // a block's columns hold whole heads (few_row_gemm_applies, choose_shape)
    for (int i = threadIdx.x; i < count; i += kThreads) {
      const int idx = first + i, row = idx / kC, c = idx % kC;
      const int64_t col = src.col0 + c;
      if (row < p.rows && col < n)
        store_rotated(p, q, row, col, part[idx], part[c % p.rotary_dim < h ? idx + h : idx - h]);
    }
    return;
  }
  for (int i = threadIdx.x; i < count; i += kThreads) {
    const int idx = first + i;
    const int row = idx / kC, c = idx % kC;
    const int64_t col = src.col0 + c;
    if (row >= p.rows || col >= n) continue;
    store_product(p, q, row, col, part[idx], p.gate ? part[kOut + idx] : 0.f);
  }
}

// How a launch cuts the work: kC = `cols` columns a block, K split over `split` blocks of `chunk`
// rows, each with a ring of `slots` stages.
struct Shape {
  int cols = 64, split = 1, chunk = 0, slots = 3;
};

constexpr size_t kBlockSmem = 110 * 1024;  // a block's most: two blocks an sm_90 SM (less where the device allows less)

// Column tiles of the grid: every weight's, or the gate's first weight's.
int64_t grid_tiles(const HalfGemv& g, int cols) {
  int64_t tiles = 0;
  for (int i = 0; i < (g.gate ? 1 : g.parts); ++i) tiles += (g.part[static_cast<size_t>(i)].n + cols - 1) / cols;
  return tiles;
}

// Blocks an SM holds of a launch shaped `s` (0: it does not fit).
int64_t blocks_per_sm(const SmemLimits& lim, const Shape& s) {
  const size_t block = Smem::bytes(s.chunk, s.cols, s.slots);
  if (block > std::min(kBlockSmem, static_cast<size_t>(lim.block_optin))) return 0;
  return std::min<int64_t>(static_cast<int64_t>(static_cast<size_t>(lim.per_sm) / (block + 1024)),  // + reserved KiB
                           2048 / kThreads);
}

// The shape split `split` ways, or kUnsupported where the chunk or the ring does not fit.
Result<Shape> split_shape(const CudaResources& res, const SmemLimits& lim, int64_t k, int cols, int split, int slots) {
  if (split < 1 || split > (res.cc_major >= 9 ? kMaxSplit : 1)) return unsupported("few_row_gemm: split");
  if (cols != 64 && cols != 128 && cols != 256) return unsupported("few_row_gemm: columns a block");
  if (slots < 2 || slots > kMaxSlots) return unsupported("few_row_gemm: ring");
  Shape s{cols, split, static_cast<int>(((k + split - 1) / split + 63) / 64 * 64), slots};
  if (s.chunk > kMaxChunk || (k + s.chunk - 1) / s.chunk != split || blocks_per_sm(lim, s) < 1)
    return unsupported("few_row_gemm: shape");
  return s;
}

// The split for `cols` columns a block: the largest whose blocks stay under 70 % of the GPU's
// block slots (`one_wave`), else four ways (a grid that needs waves anyway, an LM head).
Result<Shape> choose_split(const CudaResources& res, const SmemLimits& lim, const HalfGemv& g, int cols, int slots,
                           bool* one_wave) {
  const int64_t sms = res.sm_count > 0 ? res.sm_count : 132, tiles = grid_tiles(g, cols);
  std::optional<Shape> fallback;
  for (int split = res.cc_major >= 9 ? kMaxSplit : 1; split >= 1; --split) {
    auto s = split_shape(res, lim, g.k, cols, split, slots);
    if (!s.ok()) continue;
    *one_wave = 10 * tiles * split <= 7 * blocks_per_sm(lim, *s) * sms;
    if (*one_wave) return *s;
    if (!fallback || split == 4) fallback = *s;
  }
  if (!fallback) return unsupported("few_row_gemm: K needs more than one cluster");
  return *fallback;
}

// Measured on the H200 (bench/tools/few_row_bench, docs/benchmarks.md): a shallow ring (three
// stages) and as many blocks as fit comfortably in one wave read the weight fastest; blocks past
// ~70 % of a wave, or deep rings that cost residency, are slower; 128 columns a block (256-byte
// runs of each weight row) beat 64 where they give as many blocks. So: of 128 and 64 columns, the
// one whose split gives more blocks in one wave (128 on a tie, or when neither fits one wave).
// HalfGemv::cols / split / slots, when set, are taken as they are.
Result<Shape> choose_shape(const CudaResources& res, const SmemLimits& lim, const HalfGemv& g) {
  const int slots = g.slots > 0 ? g.slots : 3;
  const auto rotation = [](int cols) {
    return unsupported("few_row_gemm: rotary heads across " + std::to_string(cols) + "-column blocks");
  };
  if (g.split > 0 || g.cols > 0) {
    const int cols = g.cols > 0 ? g.cols : 64;
    if (!rotates_in_block(g, cols)) return rotation(cols);
    if (g.split > 0) return split_shape(res, lim, g.k, cols, g.split, slots);
    bool one_wave = false;
    return choose_split(res, lim, g, cols, slots, &one_wave);
  }
  bool wide_wave = false, narrow_wave = false, widest_wave = false;
  // Heads of 256 rotate only in blocks of 256 columns.
  if (!rotates_in_block(g, 128)) return choose_split(res, lim, g, 256, slots, &widest_wave);
  auto wide = choose_split(res, lim, g, 128, slots, &wide_wave);
  auto narrow = rotates_in_block(g, 64) ? choose_split(res, lim, g, 64, slots, &narrow_wave) : Result<Shape>(rotation(64));
  if (!wide.ok()) return narrow;
  if (!narrow.ok() || !narrow_wave) return wide;
  if (!wide_wave || grid_tiles(g, 64) * narrow->split > grid_tiles(g, 128) * wide->split) return narrow;
  return wide;
}

template <int kC, typename T>
Status launch(CudaResources& res, const HalfGemv& g, const Shape& shape, const SmemLimits& lim) {
  Args<T> p;
  const int64_t tiles = fill_product_args(g, kC, p);
  p.chunk = shape.chunk;
  p.split = shape.split;
  p.slots = shape.slots;
  constexpr auto kernel = few_row_gemm_kernel<kC, T>;
  SRT_RETURN_IF_ERROR(allow_dynamic_smem<kernel>(static_cast<int>(std::min(kBlockSmem, static_cast<size_t>(lim.block_optin)))));
  // A usual launch even with RuntimeOptions::programmatic_launch: admitted early, the kernel held its
  // ring's shared memory while it waited and the batch-8 token ran ~1 % slower (docs/benchmarks.md).
  return launch_split(kernel, p, tiles, kThreads, Smem::bytes(p.chunk, kC, p.slots), res, /*may_depend=*/false);
}

template <typename T>
Status launch(CudaResources& res, const HalfGemv& g) {
  SRT_ASSIGN_OR_RETURN(const SmemLimits lim, smem_limits());
  SRT_ASSIGN_OR_RETURN(const Shape shape, choose_shape(res, lim, g));
  if (shape.cols == 256) return launch<256, T>(res, g, shape, lim);
  if (shape.cols == 128) return launch<128, T>(res, g, shape, lim);
  return launch<64, T>(res, g, shape, lim);
}

}  // namespace

bool few_row_gemm_applies(const HalfGemv& g, int cc_major) {
  if ((g.dtype != DataType::kFloat16 && g.dtype != DataType::kBFloat16) || g.rows < 2 || g.rows > kRows ||
      g.k < 8 || g.k % 8 != 0 || g.k > (cc_major >= 9 ? int64_t{kMaxSplit} : 1) * kMaxChunk || g.parts < 1 ||
      g.parts > 3 || cc_major < 8 || !aligned16(g.a))
    return false;
  if ((g.gate && (g.parts != 2 || g.part[0].n != g.part[1].n)) || (g.residual && g.parts != 1)) return false;
  if (!rotates_in_block(g, 256)) return false;  // choose_shape picks a width that holds whole heads
  int64_t tiles = 0;
  for (int i = 0; i < g.parts; ++i) {
    const HalfGemv::Part& p = g.part[static_cast<size_t>(i)];
    if (p.n < 8 || p.n % 8 != 0 || !aligned16(p.w) || (!p.y && !(g.gate && i == 1))) return false;
    tiles += p.n / 64 + 1;
  }
  return tiles < (int64_t{1} << 31);
}

Status few_row_gemm(CudaResources& res, const HalfGemv& g) {
  if (!few_row_gemm_applies(g, res.cc_major)) return unsupported("few_row_gemm: operands it does not take");
  if (g.dtype == DataType::kFloat16) return launch<__half>(res, g);
  return launch<__nv_bfloat16>(res, g);
}

}  // namespace streamrt::cuda
