// Helpers shared by the normalization / reduction kernels (softmax.cu, layer_norm.cu, reduce.cu):
// warp and block reductions with a caller-supplied combine function, and a small by-value
// description of strided index spaces (dims / strides of up to kMaxGroups entries) that kernels
// receive as arguments, so no host memory outlives the launch.
#pragma once

#include "backends/cuda/kernels/cuda_types.cuh"

namespace streamrt::cuda::norm {

// Combines `v` across the 32 lanes of a warp; every lane gets the result.
template <typename A, typename Op>
__device__ __forceinline__ A warp_all_reduce(A v, Op op) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Combines `v` across the block (blockDim.x a multiple of 32, at most 1024); every thread gets
// the result. `scratch` holds 32 values; it is reused right away, so calls may follow each other.
template <typename A, typename Op>
__device__ __forceinline__ A block_all_reduce(A v, Op op, A* scratch) {
  v = warp_all_reduce(v, op);
  const int warps = blockDim.x / 32;
  if (warps == 1) return v;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // a previous call may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  A r = scratch[0];
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  return r;
}

struct SumOp {
  template <typename A> __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};
// Maximum that ignores NaN like std::max(acc, v) with acc never NaN (the callers start at -inf).
struct MaxOp {
  template <typename A> __device__ __forceinline__ A operator()(A a, A b) const { return b > a ? b : a; }
};

// Block size for rows of `n` elements: a power of two in [32, max_threads], about one
// element per thread for short rows.
inline int block_for_row(int64_t n, int max_threads = 1024) {
  int b = 32;
  while (b < max_threads && b < n) b *= 2;
  return b;
}

constexpr int kMaxGroups = 8;

// An index space of `rank` dims (outermost first) with an element stride for each: the offset
// of linear index i is sum(digit_d(i) * stride[d]).
struct StridedSpace {
  int rank = 0;
  int64_t dims[kMaxGroups] = {};
  int64_t strides[kMaxGroups] = {};

  __host__ __device__ int64_t offset(int64_t i) const {
    if (rank == 1) return i * strides[0];  // the common case, without a division
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t q = i / dims[d];
      off += (i - q * dims[d]) * strides[d];
      i = q;
    }
    return off;
  }
};

// The space of a contiguous tensor of `dims` read through `strides` (e.g. broadcast strides of
// an input, 0 on broadcast axes): size-1 axes dropped, neighbours merged where the strides
// allow it. False when more than kMaxGroups axes remain.
inline bool make_space(const Dims& dims, const std::vector<int64_t>& strides, StridedSpace* sp) {
  *sp = StridedSpace{};
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (sp->rank > 0 && sp->strides[sp->rank - 1] == strides[d] * dims[d]) {
      sp->dims[sp->rank - 1] *= dims[d];
      sp->strides[sp->rank - 1] = strides[d];
      continue;
    }
    if (sp->rank == kMaxGroups) return false;
    sp->dims[sp->rank] = dims[d];
    sp->strides[sp->rank] = strides[d];
    ++sp->rank;
  }
  return true;
}

}  // namespace streamrt::cuda::norm
