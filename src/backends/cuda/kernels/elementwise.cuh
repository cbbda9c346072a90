// Shared machinery for the element-wise CUDA kernels (binary arithmetic, unary math,
// activations, comparisons, logical ops, Where, Clip, Cast, ...).
//
// An op supplies a functor with `__device__ Out operator()(In0, In1, ...) const` on storage
// types (bool tensors are read as uint8_t bytes: any non-zero byte is true, as on the CPU);
// launch_elementwise() checks numpy broadcasting and picks one of three kernels:
//   - every input has the output's element count (no broadcast): contiguous, each thread does
//     kVec consecutive elements with one aligned vector load per input when every pointer is
//     aligned for it (else a plain grid-stride loop);
//   - otherwise a grid-stride loop that turns the output index into per-input offsets with a
//     BroadcastIndexer (output dims + per-input strides, 0 on broadcast axes), in 32-bit
//     arithmetic when the output has fewer than 2^31 elements (64-bit division is slow).
// The indexer drops size-1 axes and merges adjacent axes that are contiguous in every input,
// so [N,C,H,W] + [1,C,1,1] runs as 3 axes and a same-shape op as 1; at most kMaxDims axes may
// remain. Everything is passed by value in the kernel arguments; nothing waits on the stream.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "backends/cuda/kernels/cuda_types.cuh"

namespace streamrt::cuda {

// `#pragma unroll` for code that also compiles for the host (where the pragma is unknown).
#if defined(__CUDA_ARCH__)
#define SRT_DEVICE_UNROLL _Pragma("unroll")
#else
#define SRT_DEVICE_UNROLL
#endif

constexpr int kMaxDims = 8;
constexpr int kVec = 4;
constexpr int kBlock = 256;

// Output index -> element offset of each of N inputs broadcast to the output.
template <int N>
struct BroadcastIndexer {
  static_assert(N >= 1, "an indexer needs at least one input");
  int rank = 0;                         // axes in use: dims[0] outermost ... dims[rank-1] innermost
  int64_t dims[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};    // elements; 0 where input k is broadcast along the axis

  // Host-callable too (for tests).
  template <typename Idx>
  __host__ __device__ __forceinline__ void offsets(Idx i, Idx (&off)[N]) const {
    SRT_DEVICE_UNROLL
    for (int k = 0; k < N; ++k) off[k] = 0;
    // Innermost axis first; the unrolled loop with a guard keeps every array index static.
    SRT_DEVICE_UNROLL
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d < rank) {
        const Idx dim = static_cast<Idx>(dims[d]);
        const Idx q = i % dim;
        i /= dim;
        SRT_DEVICE_UNROLL
        for (int k = 0; k < N; ++k) off[k] += q * static_cast<Idx>(strides[k][d]);
      }
    }
  }
};

// Builds the indexer for inputs of shapes `ins` broadcast to `out` (numpy rules, right-aligned).
// A shape that does not broadcast is kInvalidArgument naming the node; more than kMaxDims axes
// left after merging is kUnsupported.
template <int N>
Status make_indexer(const ops::KernelContext& ctx, const Dims& out, const std::array<const Dims*, N>& ins,
                    BroadcastIndexer<N>* ix) {
  const size_t rank = out.size();
  std::array<std::vector<int64_t>, N> st;
  for (int k = 0; k < N; ++k) {
    const Dims& in = *ins[k];
    bool ok = in.size() <= rank;
    st[k].assign(rank, 0);
    int64_t step = 1;  // the input's own contiguous stride, innermost first
    for (size_t j = 0; ok && j < in.size(); ++j) {
      const size_t d_in = in.size() - 1 - j;
      const size_t d_out = rank - 1 - j;
      if (in[d_in] == out[d_out]) st[k][d_out] = step;
      else if (in[d_in] != 1) ok = false;
      step *= in[d_in];
    }
    if (!ok)
      return ctx.error("input of shape " + dims_to_string(in) + " does not broadcast to output shape " +
                       dims_to_string(out));
  }
  // Keep axes of size > 1; merge axis d into the previous kept axis p when, for every input,
  // stride[p] == stride[d] * dims[d] (both broadcast, or both contiguous with each other).
  std::array<std::vector<int64_t>, N> ms;
  for (int k = 0; k < N; ++k) ms[k].reserve(rank);
  std::vector<int64_t> md;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merge = !md.empty();
    for (int k = 0; merge && k < N; ++k) merge = ms[k].back() == st[k][d] * out[d];
    if (merge) {
      md.back() *= out[d];
      for (int k = 0; k < N; ++k) ms[k].back() = st[k][d];
    } else {
      md.push_back(out[d]);
      for (int k = 0; k < N; ++k) ms[k].push_back(st[k][d]);
    }
  }
  if (md.size() > static_cast<size_t>(kMaxDims))
    return ctx.unsupported("element-wise broadcast over " + std::to_string(md.size()) +
                           " non-mergeable axes (output " + dims_to_string(out) + "); at most " +
                           std::to_string(kMaxDims) + " are supported on CUDA");
  *ix = BroadcastIndexer<N>{};
  ix->rank = static_cast<int>(md.size());
  for (size_t d = 0; d < md.size(); ++d) {
    ix->dims[d] = md[d];
    for (int k = 0; k < N; ++k) ix->strides[k][d] = ms[k][d];
  }
  return ok_status();
}

// kVec elements in one aligned load / store.
template <typename T>
struct alignas(sizeof(T) * kVec) Vec {
  T v[kVec];
};

template <typename T>
inline bool vec_aligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * kVec) == 0;
}

// Same-shape kernel, aligned pointers: thread t handles elements [kVec*v, kVec*v + kVec) for
// v = t, t + stride, ...; the last n % kVec elements one per thread.
template <typename Out, typename F, typename... Ins>
__global__ void ew_vec_kernel(Out* y, int64_t n, F f, const Ins*... xs) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t nvec = n / kVec;
  // The loaded vectors bind to a lambda's parameter pack: one load per input, then kVec calls.
  auto body = [&](int64_t base, Vec<Ins>... vs) {
    Vec<Out> o;
#pragma unroll
    for (int j = 0; j < kVec; ++j) o.v[j] = f(vs.v[j]...);
    *reinterpret_cast<Vec<Out>*>(y + base) = o;
  };
  for (int64_t v = tid; v < nvec; v += stride) body(v * kVec, *reinterpret_cast<const Vec<Ins>*>(xs + v * kVec)...);
  for (int64_t i = nvec * kVec + tid; i < n; i += stride) y[i] = f(xs[i]...);
}

// Same-shape kernel, any alignment.
template <typename Out, typename F, typename... Ins>
__global__ void ew_contig_kernel(Out* y, int64_t n, F f, const Ins*... xs) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = f(xs[i]...);
}

template <typename Idx, typename F, size_t... K, typename... Ins>
__device__ __forceinline__ auto call_at(const F& f, const Idx* off, std::index_sequence<K...>, const Ins*... xs) {
  return f(xs[off[K]]...);
}

// Broadcast kernel: Idx is uint32_t when n < 2^31 (then every offset fits too: an input that
// broadcasts to the output has at most n elements), int64_t otherwise.
template <typename Idx, int N, typename Out, typename F, typename... Ins>
__global__ void ew_broadcast_kernel(Out* y, Idx n, BroadcastIndexer<N> ix, F f, const Ins*... xs) {
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < n; i += Idx(gridDim.x) * blockDim.x) {
    Idx off[N];
    ix.offsets(i, off);
    y[i] = call_at(f, off, std::make_index_sequence<N>{}, xs...);
  }
}

// An input: device pointer and the dims it has (broadcast to the output's).
template <typename T>
struct Operand {
  const T* data;
  const Dims* dims;
};
template <typename T>
Operand<T> operand(const ops::TensorRef& t) {
  return {static_cast<const T*>(t.data), &t.dims};
}

// y[i] = f(x0[i], x1[i], ...) for inputs holding exactly n elements each (caller checked).
template <typename Out, typename F, typename... Ins>
Status launch_same_shape(CudaKernelContext& ctx, const char* name, Out* y, int64_t n, const F& f,
                         const Ins*... xs) {
  if (n <= 0) return ok_status();
  const bool aligned = vec_aligned(y) && (vec_aligned(xs) && ...);
  if (aligned) {
    const int64_t work = n / kVec + n % kVec;
    ew_vec_kernel<Out, F, Ins...><<<grid_for(work, kBlock), kBlock, 0, ctx.stream()>>>(y, n, f, xs...);
  } else {
    ew_contig_kernel<Out, F, Ins...><<<grid_for(n, kBlock), kBlock, 0, ctx.stream()>>>(y, n, f, xs...);
  }
  SRT_CUDA_LAUNCH(name);
  return ok_status();
}

// y (of dims out_dims) = f(x0, x1, ...) with numpy broadcasting of the inputs.
template <typename Out, typename F, typename... Ins>
Status launch_elementwise(CudaKernelContext& ctx, const char* name, Out* y, const Dims& out_dims, const F& f,
                          Operand<Ins>... xs) {
  constexpr int N = sizeof...(Ins);
  BroadcastIndexer<N> ix;
  SRT_RETURN_IF_ERROR(make_indexer<N>(ctx, out_dims, {xs.dims...}, &ix));
  const int64_t n = dims_numel(out_dims);
  if (n == 0) return ok_status();
  // Broadcastable with as many elements as the output: nothing is repeated, same layout.
  if (((dims_numel(*xs.dims) == n) && ...)) return launch_same_shape(ctx, name, y, n, f, xs.data...);
  if (n <= std::numeric_limits<int32_t>::max()) {
    ew_broadcast_kernel<uint32_t, N, Out, F, Ins...>
        <<<grid_for(n, kBlock), kBlock, 0, ctx.stream()>>>(y, static_cast<uint32_t>(n), ix, f, xs.data...);
  } else {
    ew_broadcast_kernel<int64_t, N, Out, F, Ins...><<<grid_for(n, kBlock), kBlock, 0, ctx.stream()>>>(y, n, ix, f, xs.data...);
  }
  SRT_CUDA_LAUNCH(name);
  return ok_status();
}

// Storage-type functor around an arithmetic one: T -> acc_t<T> -> op -> T.
template <typename T, typename Op>
struct MapFn {
  Op op;
  __device__ __forceinline__ T operator()(T x) const { return from_acc<T>(op(to_acc(x))); }
};

// Same-shape unary op over input 0 -> output 0 (same dtype) for the dtypes in Allowed;
// op(acc_t<T>) -> acc_t<T>. Mirrors the CPU's check_same_numel.
template <unsigned Allowed, typename Op>
Status map_unary(CudaKernelContext& ctx, const char* name, const Op& op) {
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.numel() != y.numel() || x.dtype != y.dtype)
    return ctx.error("input " + std::string(dtype_name(x.dtype)) + " " + dims_to_string(x.dims) +
                     " does not match output " + dtype_name(y.dtype) + " " + dims_to_string(y.dims));
  return cuda_dispatch<Allowed>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    return launch_same_shape(ctx, name, y.as<T>(), y.numel(), MapFn<T, Op>{op}, x.as<const T>());
  });
}

// Negation that wraps for the most negative integer (as ops::wrapping_neg on the CPU).
template <typename C>
__device__ __forceinline__ C wrapping_neg(C x) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(x));
  else return -x;
}

// Eight consecutive elements as floats, from / to a 16-byte-aligned address (one 16-byte access for
// 2-byte types, two for float).
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&out)[8]) {
  if constexpr (sizeof(T) == 2) {
    union {
      uint4 u;
      T t[8];
    } v;
    v.u = *reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = static_cast<float>(to_acc(v.t[e]));
  } else {
    const float4 lo = reinterpret_cast<const float4*>(p)[0], hi = reinterpret_cast<const float4*>(p)[1];
    out[0] = lo.x, out[1] = lo.y, out[2] = lo.z, out[3] = lo.w, out[4] = hi.x, out[5] = hi.y, out[6] = hi.z,
    out[7] = hi.w;
  }
}
template <typename T>
__device__ __forceinline__ void store8(T* p, const float (&v)[8]) {
  if constexpr (sizeof(T) == 2) {
    union {
      uint4 u;
      T t[8];
    } o;
#pragma unroll
    for (int e = 0; e < 8; ++e) o.t[e] = from_acc<T>(v[e]);
    *reinterpret_cast<uint4*>(p) = o.u;
  } else {
    reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
  }
}

}  // namespace streamrt::cuda
