// One-row MatMul on a float16 / bfloat16 weight in ONNX's K x N layout (half_gemv.h). One row
// only (more rows: few_row_gemm.cu's tensor cores; accumulators for 8 rows here were 2x slower
// than cuBLASLt: float FMAs and reads of A); 512-thread blocks for wide outputs were slower than
// these.
//
// Reading the weight once is all the time there is, and the kernel is bound by how many 16-byte
// loads are in flight. A block owns 64 output columns (128-byte runs of each weight row) and a
// chunk of K: its 256 threads are 8 column groups of 16 bytes by 32 row lanes, each with eight
// loads of weight rows issued before any is used (the first eight before the chunk of A
// are staged in shared memory). A decode step's projections have few columns for their bytes
// (2048 x 2048: 32 column tiles), so K is split over up to eight blocks of one thread-block
// cluster (sm_90) until the GPU holds two blocks a multiprocessor; the blocks add their sums
// through distributed shared memory: one launch, no scratch, nothing to zero between runs.
//
// MatMulGroup's weights share the launch: the grid's column tiles run through every part's
// columns (a block reads one weight), and the split counts them all, so Q / K / V's 2048 + 512 +
// 512 columns fill the GPU where K and V alone could not. A gate's block reads its 64 columns of
// both weights, one after the other, and writes silu(P0) * P1. A normalized A costs each block a
// pass over all of A for the sum of squares (K x 2 bytes from L2) before it stages its chunk.

#include "backends/cuda/cuda_run_options.h"
#include "backends/cuda/kernels/cuda_types.cuh"
#include "backends/cuda/kernels/half_gemv.h"
#include "backends/cuda/kernels/small_product.cuh"
#include "backends/cuda/kernels/norm_util.cuh"
#include "ops/fused_elementwise.h"

namespace streamrt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kCols = 64;                         // output columns a block
constexpr int kGroups = kCols / 8;                // threads across them, 16 bytes each
constexpr int kLanes = kThreads / kGroups;        // threads down the chunk
constexpr int kWarps = kThreads / 32;
constexpr int kUnroll = 8;                        // weight loads in flight a thread

template <typename T>
struct Pair;
template <>
struct Pair<__half> {
  using type = __half2;
  static __device__ __forceinline__ float2 to_float2(type v) { return __half22float2(v); }
};
template <>
struct Pair<__nv_bfloat16> {
  using type = __nv_bfloat162;
  static __device__ __forceinline__ float2 to_float2(type v) { return __bfloat1622float2(v); }
};

// Eight weights (16 bytes) times A's value for their row, into acc.
template <typename T>
__device__ __forceinline__ void accumulate(const uint4& v, float x, float (&acc)[8]) {
  const auto* p = reinterpret_cast<const typename Pair<T>::type*>(&v);
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    const float2 f = Pair<T>::to_float2(p[h]);
    acc[2 * h] = fmaf(x, f.x, acc[2 * h]);
    acc[2 * h + 1] = fmaf(x, f.y, acc[2 * h + 1]);
  }
}

// Up to kUnroll weight rows j, j + kLanes, ... below len; returns how many.
template <typename T>
__device__ __forceinline__ int load_rows(const T* wp, int64_t stride, int j, int len, uint4 (&v)[kUnroll]) {
  int have = 0;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (j + u * kLanes < len) v[u] = __ldcs(reinterpret_cast<const uint4*>(wp + u * stride)), have = u + 1;
  return have;
}

template <typename T>
using GemvArgs = ProductArgs<T>;

// Stages the block's chunk of A in xs: as it is, or RMS-normalized as RMSNormalization's kernel
// rounds it (every block sums the squares of all of A: a few KiB from L2).
template <typename T>
__device__ __forceinline__ void stage_a(const GemvArgs<T>& p, int64_t k0, int len, T* xs, float* scratch) {
  if (!p.scale) {
    for (int j = threadIdx.x; j < len; j += kThreads) xs[j] = p.a[k0 + j];
    return;
  }
  float ss = 0.f;
  for (int64_t j = threadIdx.x; j < p.k; j += kThreads) {
    const float x = static_cast<float>(to_acc(p.a[j]));
    ss += x * x;
  }
  const float inv = rsqrtf(norm::block_all_reduce(ss, norm::SumOp{}, scratch) / static_cast<float>(p.k) + p.eps);
  for (int j = threadIdx.x; j < len; j += kThreads)
    xs[j] = from_acc<T>(static_cast<float>(to_acc(p.a[k0 + j])) * inv * static_cast<float>(to_acc(p.scale[k0 + j])));
}

// This block's sums of its 64 columns of one weight into out[kCols]: the eight first loads (v,
// have) were issued by the caller; xs holds the chunk of A.
template <typename T>
__device__ __forceinline__ void column_sums(const T* wp, int64_t stride, int len, uint4 (&v)[kUnroll], int have,
                                            const T* xs, float* red, float* out) {
  const int tx = threadIdx.x % kGroups, ty = threadIdx.x / kGroups;
  float acc[8] = {};
  for (int j = ty; have > 0;) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < have) accumulate<T>(v[u], static_cast<float>(to_acc(xs[j + u * kLanes])), acc);
    j += kUnroll * kLanes;
    wp += kUnroll * stride;
    have = load_rows(wp, stride, j, len, v);
  }
  // Sum the row lanes: four in a warp by shuffles, then the warps in shared memory.
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], 8);
    acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], 16);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane < kGroups)
#pragma unroll
    for (int e = 0; e < 8; ++e) red[warp * kCols + tx * 8 + e] = acc[e];
  __syncthreads();
  for (int i = threadIdx.x; i < kCols; i += kThreads) {
    float s = 0.f;
#pragma unroll
    for (int v2 = 0; v2 < kWarps; ++v2) s += red[v2 * kCols + i];
    out[i] = s;
  }
  __syncthreads();  // red is free again
}

// Grid: (column tiles of every part, split); with split > 1 a cluster is (1, split, 1), so
// blockIdx.y is the block's rank in it. A gate's block reads its columns of both weights.
template <typename T>
__global__ void __launch_bounds__(kThreads) half_gemv_kernel(const GemvArgs<T> p) {
  __shared__ __align__(16) T xs[kMaxChunk];
  __shared__ float red[kWarps * kCols];
  __shared__ float part[2][kCols];
  int q = 0;
  while (q + 1 < p.parts && !p.gate && blockIdx.x >= p.tile_end[q]) ++q;
  const int64_t tile = blockIdx.x - (q > 0 ? p.tile_end[q - 1] : 0);
  const int tx = threadIdx.x % kGroups, ty = threadIdx.x / kGroups;
  const int64_t k0 = static_cast<int64_t>(blockIdx.y) * p.chunk;
  const int len = static_cast<int>(k0 < p.k ? min(static_cast<int64_t>(p.chunk), p.k - k0) : 0);
  const int64_t col = tile * kCols + tx * 8;
  const int64_t n = p.n[q];
  const bool has_col = col < n;
  const int64_t stride = static_cast<int64_t>(kLanes) * n;
  uint4 v[kUnroll];
  // The first weight loads are in flight while the step before ends (no step writes a weight: see
  // dependent_launch.cuh) and A is staged.
  const T* wp = p.w[q] + (k0 + ty) * n + col;
  int have = has_col ? load_rows(wp, stride, ty, len, v) : 0;
  wait_for_earlier_steps();
  stage_a(p, k0, len, xs, red);
  __syncthreads();
  column_sums<T>(wp, stride, len, v, have, xs, red, part[0]);
  if (p.gate) {
    const T* wp1 = p.w[1] + (k0 + ty) * n + col;
    have = has_col ? load_rows(wp1, stride, ty, len, v) : 0;
    column_sums<T>(wp1, stride, len, v, have, xs, red, part[1]);
  }
  dependents_may_start();  // the next step scheduled in this one's tail (dependent_launch.cuh: why not sooner)

  // The cluster's first block adds the others' sums and writes.
  const int sums = p.gate ? 2 : 1;
  if (p.split > 1) {
    split_sync();
    if (blockIdx.y == 0)
      for (int i = threadIdx.x; i < sums * kCols; i += kThreads)
        for (int r = 1; r < p.split; ++r) (&part[0][0])[i] += split_peer(&part[0][0], r)[i];
    split_sync();  // the others' shared memory stays until it has been read
    if (blockIdx.y != 0) return;
  }
  if (p.cos[q]) {  // rotated (no gate: part[1] is free): every column as stored first, then the pairs
    for (int i = threadIdx.x; i < kCols; i += kThreads) {
      const int64_t c = tile * kCols + i;
      if (c < n) part[1][i] = rotated_input(p, q, c, part[0][i]);
    }
    __syncthreads();
    const int h = p.rotary_dim / 2;  // the tile holds whole heads (half_gemv_applies)
    for (int i = threadIdx.x; i < kCols; i += kThreads) {
      const int64_t c = tile * kCols + i;
      if (c < n) store_rotated(p, q, 0, c, part[1][i], part[1][i % p.rotary_dim < h ? i + h : i - h]);
    }
    return;
  }
  for (int i = threadIdx.x; i < kCols; i += kThreads) {
    const int64_t c = tile * kCols + i;
    if (c < n) store_product(p, q, 0, c, part[0][i], p.gate ? part[1][i] : 0.f);
  }
}

template <typename T>
Status launch(CudaResources& res, const HalfGemv& g) {
  GemvArgs<T> p;
  const int64_t tiles = fill_product_args(g, kCols, p);
  // Two blocks a multiprocessor where the columns alone give fewer (a gate's block does two
  // tiles' work), at least eight rows a row lane (one load each in flight), and chunks that fit
  // shared memory.
  const int64_t sms = res.sm_count > 0 ? res.sm_count : 132;
  const int64_t work = tiles * (g.gate ? 2 : 1);
  int64_t split = std::min<int64_t>({kMaxSplit, (2 * sms + work - 1) / work, std::max<int64_t>(1, g.k / (kLanes * kUnroll))});
  split = std::max<int64_t>(split, (g.k + kMaxChunk - 1) / kMaxChunk);
  if (res.cc_major < 9) split = 1;  // thread-block clusters (and so a split K) need sm_90
  const int64_t chunk = ((g.k + split - 1) / split + 7) / 8 * 8;
  split = (g.k + chunk - 1) / chunk;
  if (chunk > kMaxChunk) return unsupported("half_gemv: K needs more than one cluster");
  p.chunk = static_cast<int>(chunk);
  p.split = static_cast<int>(split);

  return launch_split(half_gemv_kernel<T>, p, tiles, kThreads, 0, res);
}

}  // namespace

bool half_gemv_applies(const HalfGemv& g, int cc_major) {
  if (g.rows != 1) return current_run_options().few_row_kernel && few_row_gemm_applies(g, cc_major);
  if ((g.dtype != DataType::kFloat16 && g.dtype != DataType::kBFloat16) || g.rows != 1 || g.k < 1 ||
      g.k > int64_t{kMaxSplit} * kMaxChunk || g.parts < 1 || g.parts > 3)
    return false;
  if ((g.gate && (g.parts != 2 || g.part[0].n != g.part[1].n)) || (g.residual && g.parts != 1)) return false;
  if ((g.norm_scale && !g.a) || !rotates_in_block(g, kCols)) return false;
  int64_t tiles = 0;
  for (int i = 0; i < g.parts; ++i) {
    const HalfGemv::Part& p = g.part[static_cast<size_t>(i)];
    if (p.n < 8 || p.n % 8 != 0 || !aligned16(p.w) || (!p.y && !(g.gate && i == 1))) return false;
    tiles += p.n / kCols + 1;
  }
  return tiles < (int64_t{1} << 31);
}

Status half_gemv(CudaResources& res, const HalfGemv& g) {
  if (g.rows != 1) return few_row_gemm(res, g);
  if (!half_gemv_applies(g, res.cc_major)) return unsupported("half_gemv: operands it does not take");
  if (g.dtype == DataType::kFloat16) return launch<__half>(res, g);
  return launch<__nv_bfloat16>(res, g);
}

}  // namespace streamrt::cuda
