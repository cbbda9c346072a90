// One-row MatMul on a float16 / bfloat16 weight in ONNX's K x N layout (half_gemv.h). One row
// only: a version with accumulators for 8 rows made a batch-8 Llama-1B token 2x slower than
// cuBLASLt (its float FMAs and reads of A, H200); 512-thread blocks for wide outputs were slower
// than these.
//
// Reading the weight once is all the time there is, and the kernel is bound by how many 16-byte
// loads are in flight. A block owns 64 output columns (128-byte runs of each weight row) and a
// chunk of K: its 256 threads are 8 column groups of 16 bytes by 32 row lanes, each with eight
// loads of weight rows issued before any is used (the first eight before the chunk of A
// are staged in shared memory). A decode step's projections have few columns for their bytes
// (2048 x 2048: 32 column tiles), so K is split over up to eight blocks of one thread-block
// cluster (sm_90) until the GPU holds two blocks a multiprocessor; the blocks add their sums
// through distributed shared memory: one launch, no scratch, nothing to zero between runs.
#include <cooperative_groups.h>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "backends/cuda/kernels/half_gemv.h"

namespace streamrt::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 256;
constexpr int kCols = 64;                         // output columns a block
constexpr int kGroups = kCols / 8;                // threads across them, 16 bytes each
constexpr int kLanes = kThreads / kGroups;        // threads down the chunk
constexpr int kWarps = kThreads / 32;
constexpr int kMaxSplit = 8;                      // the portable cluster size
constexpr int kMaxChunk = 2048;                   // K a block: its piece of A fits shared memory
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

// Grid: (column tiles, split); with split > 1 a cluster is (1, split, 1), so blockIdx.y is the
// block's rank in it.
template <typename T>
__global__ void __launch_bounds__(kThreads) half_gemv_kernel(const T* __restrict__ a, const T* __restrict__ w,
                                                             const T* __restrict__ bias, const T* residual, T* y,
                                                             int64_t k, int64_t n, int chunk, int split) {
  // The chunk of A, later the warps' sums ([warp][kCols] floats: half its bytes).
  __shared__ __align__(16) T xs[kMaxChunk];
  __shared__ float part[kCols];
  const int tx = threadIdx.x % kGroups, ty = threadIdx.x / kGroups;
  const int64_t k0 = static_cast<int64_t>(blockIdx.y) * chunk;
  const int len = static_cast<int>(k0 < k ? min(static_cast<int64_t>(chunk), k - k0) : 0);
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kCols + tx * 8;
  const bool has_col = col < n;
  const int64_t stride = static_cast<int64_t>(kLanes) * n;
  const T* wp = w + (k0 + ty) * n + col;
  uint4 v[kUnroll];
  int have = has_col ? load_rows(wp, stride, ty, len, v) : 0;

  // The chunk of A, by elements (A may sit at any element offset).
  for (int j = threadIdx.x; j < len; j += kThreads) xs[j] = a[k0 + j];
  __syncthreads();

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
  __syncthreads();  // xs is free
  float* red = reinterpret_cast<float*>(xs);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane < kGroups)
#pragma unroll
    for (int e = 0; e < 8; ++e) red[warp * kCols + tx * 8 + e] = acc[e];
  __syncthreads();
  for (int i = threadIdx.x; i < kCols; i += kThreads) {
    float s = 0.f;
#pragma unroll
    for (int v2 = 0; v2 < kWarps; ++v2) s += red[v2 * kCols + i];
    part[i] = s;
  }

  // The cluster's first block adds the others' sums and writes.
  if (split > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    __trap();  // the host launches clusters on sm_90 and later only
#else
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    if (blockIdx.y == 0)
      for (int i = threadIdx.x; i < kCols; i += kThreads)
        for (int r = 1; r < split; ++r) part[i] += cluster.map_shared_rank(part, r)[i];
    cluster.sync();  // the others' shared memory stays until it has been read
    if (blockIdx.y != 0) return;
#endif
  }
  for (int i = threadIdx.x; i < kCols; i += kThreads) {
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kCols + i;
    if (c >= n) continue;
    float s = part[i];
    if (bias) s += static_cast<float>(to_acc(bias[c]));
    if (residual) s += static_cast<float>(to_acc(residual[c]));  // may be y itself: read first
    y[c] = from_acc<T>(s);
  }
}

template <typename T>
Status launch(CudaResources& res, const HalfGemv& g) {
  const int64_t tiles = (g.n + kCols - 1) / kCols;
  // Two blocks a multiprocessor where the columns alone give fewer, at least eight rows a row
  // lane (one load each in flight), and chunks that fit shared memory.
  const int64_t sms = res.sm_count > 0 ? res.sm_count : 132;
  int64_t split = std::min<int64_t>({kMaxSplit, (2 * sms + tiles - 1) / tiles, std::max<int64_t>(1, g.k / (kLanes * kUnroll))});
  split = std::max<int64_t>(split, (g.k + kMaxChunk - 1) / kMaxChunk);
  if (res.cc_major < 9) split = 1;  // thread-block clusters (and so a split K) need sm_90
  const int64_t chunk = ((g.k + split - 1) / split + 7) / 8 * 8;
  split = (g.k + chunk - 1) / chunk;
  if (chunk > kMaxChunk) return unsupported("half_gemv: K needs more than one cluster");

  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(split), 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.stream = res.stream;
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 1;
  attr.val.clusterDim.y = static_cast<unsigned>(split);
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = split > 1 ? 1 : 0;
  SRT_CUDA(cudaLaunchKernelEx(&cfg, half_gemv_kernel<T>, static_cast<const T*>(g.a), static_cast<const T*>(g.w),
                              static_cast<const T*>(g.bias), static_cast<const T*>(g.residual), static_cast<T*>(g.y),
                              g.k, g.n, static_cast<int>(chunk), static_cast<int>(split)));
  return ok_status();
}

}  // namespace

bool half_gemv_applies(const HalfGemv& g) {
  return (g.dtype == DataType::kFloat16 || g.dtype == DataType::kBFloat16) && g.rows == 1 && g.k >= 1 && g.k <= int64_t{kMaxSplit} * kMaxChunk && g.n >= 8 &&
         g.n % 8 == 0 && g.n / kCols < (int64_t{1} << 31) && aligned16(g.w);
}

Status half_gemv(CudaResources& res, const HalfGemv& g) {
  if (!half_gemv_applies(g)) return unsupported("half_gemv: operands it does not take");
  if (g.dtype == DataType::kFloat16) return launch<__half>(res, g);
  return launch<__nv_bfloat16>(res, g);
}

}  // namespace streamrt::cuda
