// What the one-row GEMV (half_gemv.cu) and the few-row kernel (few_row_gemm.cu) share: their
// arguments, filled from a HalfGemv; the epilogue of one output (bias, SwiGLU's gate, residual);
// and the launch, whose grid is (column tiles, K split) with a split K as a thread-block cluster.
#pragma once

#include <cooperative_groups.h>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "backends/cuda/kernels/dependent_launch.cuh"
#include "backends/cuda/kernels/half_gemv.h"
#include "ops/fused_elementwise.h"

namespace streamrt::cuda {

// K split over at most a portable cluster's blocks, each with a chunk of A that fits shared memory.
constexpr int kMaxSplit = 8;
constexpr int kMaxChunk = 2048;

template <typename T>
struct ProductArgs {
  const T* a;
  const T* scale;  // RMS normalization of A, or null
  float eps;
  int64_t k;
  int rows;
  const T* w[3];
  const T* bias[3];
  T* y[3];
  int64_t n[3];
  int64_t tile_end[3];  // column tiles up to and including each part (the gate: part 0's only)
  const T* residual;
  const T* cos[3];  // rotary tables of each part, or null
  const T* sin[3];
  int64_t table_rows[3];
  int rotary_dim;
  int parts, gate, chunk, split, slots;
};

// Everything but chunk / split / slots from `g`, with column tiles of `cols`; returns the tiles.
template <typename T>
int64_t fill_product_args(const HalfGemv& g, int64_t cols, ProductArgs<T>& p) {
  p = {};
  p.a = static_cast<const T*>(g.a);
  p.scale = static_cast<const T*>(g.norm_scale);
  p.eps = g.eps;
  p.k = g.k;
  p.rows = static_cast<int>(g.rows);
  p.parts = g.parts;
  p.gate = g.gate ? 1 : 0;
  p.residual = static_cast<const T*>(g.residual);
  p.rotary_dim = static_cast<int>(g.rotary_dim);
  int64_t tiles = 0;
  for (int i = 0; i < g.parts; ++i) {
    const HalfGemv::Part& gp = g.part[static_cast<size_t>(i)];
    p.w[i] = static_cast<const T*>(gp.w);
    p.bias[i] = static_cast<const T*>(gp.bias);
    p.y[i] = static_cast<T*>(gp.y);
    p.n[i] = gp.n;
    p.cos[i] = static_cast<const T*>(gp.cos);
    p.sin[i] = static_cast<const T*>(gp.sin);
    p.table_rows[i] = gp.table_rows;
    if (!g.gate || i == 0) tiles += (gp.n + cols - 1) / cols;
    p.tile_end[i] = tiles;
  }
  return tiles;
}

// Output (row, col) of part q from its float sums: s of the product (u of the gate's second one).
template <typename T>
__device__ __forceinline__ void store_product(const ProductArgs<T>& p, int q, int64_t row, int64_t col, float s,
                                              float u) {
  const int64_t n = p.n[q];
  if (p.bias[q]) s += static_cast<float>(to_acc(p.bias[q][col]));
  if (p.gate) {
    if (p.bias[1]) u += static_cast<float>(to_acc(p.bias[1][col]));
    // Each product rounded as the unfused MatMul step would have stored it.
    p.y[0][row * n + col] = from_acc<T>(ops::fused::gate_value(static_cast<float>(to_acc(from_acc<T>(s))),
                                                               static_cast<float>(to_acc(from_acc<T>(u)))));
    return;
  }
  if (p.residual) s += static_cast<float>(to_acc(p.residual[row * n + col]));  // may be y itself: read first
  p.y[q][row * n + col] = from_acc<T>(s);
}

// Output (row, col) of a part with rotary tables, from its value as the product step would store it
// (bias added, rounded to the type: rotated_input) and its pair's, col -/+ d / 2 in the head.
template <typename T>
__device__ __forceinline__ float rotated_input(const ProductArgs<T>& p, int q, int64_t col, float s) {
  if (p.bias[q]) s += static_cast<float>(to_acc(p.bias[q][col]));
  return static_cast<float>(to_acc(from_acc<T>(s)));
}
template <typename T>
__device__ __forceinline__ void store_rotated(const ProductArgs<T>& p, int q, int64_t row, int64_t col, float x,
                                              float pair) {
  const int64_t d = p.rotary_dim, w = col % d, t = (row % p.table_rows[q]) * d + w;
  const float c = static_cast<float>(to_acc(p.cos[q][t])), s = static_cast<float>(to_acc(p.sin[q][t]));
  p.y[q][row * p.n[q] + col] = from_acc<T>(w < d / 2 ? x * c - pair * s : x * c + pair * s);
}
// Whether a block of `cols` columns can rotate `g`'s parts itself (whole heads in every block).
inline bool rotates_in_block(const HalfGemv& g, int cols) {
  if (g.rotary_dim == 0) return true;
  if (g.rotary_dim < 2 || (g.rotary_dim & (g.rotary_dim - 1)) != 0 || cols % g.rotary_dim != 0 || g.gate ||
      g.residual)
    return false;
  for (int i = 0; i < g.parts; ++i) {
    const HalfGemv::Part& gp = g.part[static_cast<size_t>(i)];
    if (gp.cos && (!gp.sin || gp.table_rows < 1 || gp.n % g.rotary_dim != 0)) return false;
  }
  return true;
}

// A split launch's cluster (the blocks of one column tile, blockIdx.y their rank): a barrier over
// its blocks, and block `rank`'s copy of a shared-memory variable. The host launches clusters on
// sm_90 and later only; compiled for older devices they trap.
__device__ __forceinline__ void split_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();
#else
  cooperative_groups::this_cluster().sync();
#endif
}
template <typename V>
__device__ __forceinline__ V* split_peer(V* p, int rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();
  return p;
#else
  return cooperative_groups::this_cluster().map_shared_rank(p, static_cast<unsigned>(rank));
#endif
}

// Launches kernel<<<(tiles, p.split), threads, smem>>>(p) on res.stream, the split as a (1, split, 1)
// cluster, as a dependent launch where res allows (dependent_launch.cuh) and `may_depend` (false: a
// usual launch whatever res allows).
template <typename T, typename Kernel>
Status launch_split(Kernel kernel, const ProductArgs<T>& p, int64_t tiles, int threads, size_t smem,
                    const CudaResources& res, bool may_depend = true) {
  return launch_kernel(res.stream, may_depend && dependent_launch(res), kernel,
                       dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(p.split), 1),
                       dim3(static_cast<unsigned>(threads), 1, 1), smem, static_cast<unsigned>(p.split), p);
}

}  // namespace streamrt::cuda
