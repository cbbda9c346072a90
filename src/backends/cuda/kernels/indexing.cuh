// Device twins of src/ops/indexing.h for the CUDA kernels of GatherElements, ScatterElements,
// GatherND and ScatterND: the data offset an index addresses (or -1 when the index is out of
// range: the index data lives on the device and a step cannot fail after its launch, so an
// out-of-range index is skipped, or read as zeros, instead of touching memory out of bounds),
// and the scatter reductions, applied atomically (repeated indices may meet in one launch).
#pragma once

#include <cstring>
#include <string>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/data_movement.h"
#include "ops/indexing.h"

namespace streamrt::cuda {

// Most data dims the index kernels handle (kernel parameters hold dims and strides by value).
inline constexpr int kMaxIndexRank = 12;

// GatherElements / ScatterElements: indices' dims, data's strides, the axis and its length.
struct ElementSpace {
  int rank = 0;
  int axis = 0;
  int64_t axis_dim = 0;
  int64_t dims[kMaxIndexRank] = {};
  int64_t strides[kMaxIndexRank] = {};
};

// Offset in data of flat element i of indices whose value is v, or -1 when v is out of range.
__device__ __forceinline__ int64_t element_offset(const ElementSpace& s, int64_t i, int64_t v) {
  if (v < 0) v += s.axis_dim;
  if (v < 0 || v >= s.axis_dim) return -1;
  int64_t off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t c = i % s.dims[d];
    i /= s.dims[d];
    off += (d == s.axis ? v : c) * s.strides[d];
  }
  return off;
}

inline Result<ElementSpace> element_space(const ops::KernelContext& ctx, const Dims& data, const Dims& indices,
                                          int64_t axis) {
  SRT_RETURN_IF_ERROR(ops::check_element_dims(ctx.node(), StatusCode::kInvalidArgument, data, indices, axis));
  if (data.size() > static_cast<size_t>(kMaxIndexRank))
    return ctx.unsupported("rank " + std::to_string(data.size()) + " is above the CUDA limit of " +
                           std::to_string(kMaxIndexRank));
  const auto strides = ops::dense_strides(data);
  ElementSpace s;
  s.rank = static_cast<int>(data.size());
  s.axis = static_cast<int>(axis);
  s.axis_dim = data[static_cast<size_t>(axis)];
  for (size_t d = 0; d < data.size(); ++d) {
    s.dims[d] = indices[d];
    s.strides[d] = strides[d];
  }
  return s;
}

// GatherND / ScatterND: the k indexed data dims after the batch dims and their strides; slice t
// (a row of indices' last axis) lies in batch t / per_batch.
struct NdSpace {
  int k = 0;
  int64_t per_batch = 1;
  int64_t batch_stride = 0;
  int64_t slice = 0;  // elements per slice
  int64_t dims[kMaxIndexRank] = {};
  int64_t strides[kMaxIndexRank] = {};
};

template <typename Idx>
__device__ __forceinline__ int64_t nd_offset(const NdSpace& s, const Idx* idx, int64_t t) {
  int64_t off = (t / s.per_batch) * s.batch_stride;
  for (int j = 0; j < s.k; ++j) {
    int64_t v = static_cast<int64_t>(idx[t * s.k + j]);
    if (v < 0) v += s.dims[j];
    if (v < 0 || v >= s.dims[j]) return -1;
    off += v * s.strides[j];
  }
  return off;
}

inline Result<NdSpace> nd_space(const ops::KernelContext& ctx, const Dims& data, const Dims& indices,
                                int64_t batch_dims) {
  SRT_ASSIGN_OR_RETURN(int64_t k,
                       ops::check_nd_dims(ctx.node(), StatusCode::kInvalidArgument, data, indices, batch_dims));
  if (data.size() > static_cast<size_t>(kMaxIndexRank))
    return ctx.unsupported("rank " + std::to_string(data.size()) + " is above the CUDA limit of " +
                           std::to_string(kMaxIndexRank));
  const size_t b = static_cast<size_t>(batch_dims);
  const auto strides = ops::dense_strides(data);
  NdSpace s;
  s.k = static_cast<int>(k);
  s.per_batch = std::max<int64_t>(ops::dims_product(indices, b, indices.size() - 1), 1);
  s.batch_stride = ops::dims_product(data, b, data.size());
  s.slice = ops::dims_product(data, b + static_cast<size_t>(k), data.size());
  for (size_t j = 0; j < static_cast<size_t>(k); ++j) {
    s.dims[j] = data[b + j];
    s.strides[j] = strides[b + j];
  }
  return s;
}

// Addressers: the data offset of flat element i of the output (gathers) or the updates
// (scatters), -1 when its index is out of range.
template <typename Idx>
struct ElementAddr {
  ElementSpace s;
  const Idx* idx;
  __device__ __forceinline__ int64_t operator()(int64_t i) const {
    return element_offset(s, i, static_cast<int64_t>(idx[i]));
  }
};
template <typename Idx>
struct NdAddr {
  NdSpace s;
  const Idx* idx;
  __device__ __forceinline__ int64_t operator()(int64_t i) const {
    const int64_t off = nd_offset(s, idx, i / s.slice);
    return off < 0 ? -1 : off + i % s.slice;
  }
};

// Calls f.template operator()<I>() with the C++ type of an int32 / int64 index tensor.
template <typename F>
Status by_index_type(const ops::KernelContext& ctx, DataType t, F&& f) {
  if (t == DataType::kInt64) return f.template operator()<int64_t>();
  if (t == DataType::kInt32) return f.template operator()<int32_t>();
  return ctx.error(std::string("indices must be int32 or int64, got ") + dtype_name(t));
}

template <typename To, typename From>
__device__ __forceinline__ To bits_as(From f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  memcpy(&t, &f, sizeof(To));
  return t;
}

// reduce(a, b) as src/ops/indexing.cc computes it: integers wrap, bools or / and, floats in
// float with NaN winning max / min.
template <typename T>
__device__ __forceinline__ T scatter_combine(ops::ScatterReduction r, T a, T b) {
  using R = ops::ScatterReduction;
  if constexpr (std::is_same_v<T, bool>) {
    return (r == R::kAdd || r == R::kMax) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<T>) {
    switch (r) {
      case R::kAdd: return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      case R::kMul: return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      case R::kMax: return a > b ? a : b;
      case R::kMin: return a < b ? a : b;
      default: return b;
    }
  } else {
    const float x = to_acc(a), y = to_acc(b);
    switch (r) {
      case R::kAdd: return from_acc<T>(__fadd_rn(x, y));
      case R::kMul: return from_acc<T>(__fmul_rn(x, y));
      case R::kMax: return isnan(x) || x > y ? a : b;
      case R::kMin: return isnan(x) || x < y ? a : b;
      default: return b;
    }
  }
}

// *p = reduce(*p, v), atomically: a compare-and-swap loop on the element's bits (for 1-byte
// types on the aligned 32-bit word holding it: arena slots are 64-byte aligned and sized in
// 64-byte steps, cudaMalloc allocations in 256-byte ones, so that word lies inside the buffer's
// allocation; its other bytes are written back unchanged, so neighbours that other threads
// update are kept).
template <typename T>
__device__ void atomic_combine(T* p, T v, ops::ScatterReduction r) {
  if constexpr (sizeof(T) == 1) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(a & ~uintptr_t{3});
    const unsigned int shift = static_cast<unsigned int>(a & 3) * 8;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T cur = bits_as<T>(static_cast<uint8_t>(assumed >> shift));
      const unsigned int nb = bits_as<uint8_t>(scatter_combine<T>(r, cur, v));
      old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (nb << shift));
    } while (old != assumed);
  } else {
    using U = std::conditional_t<sizeof(T) == 2, unsigned short int,
                                 std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long int>>;
    U* q = reinterpret_cast<U*>(p);
    U old = *q, assumed;
    do {
      assumed = old;
      old = atomicCAS(q, assumed, bits_as<U>(scatter_combine<T>(r, bits_as<T>(assumed), v)));
    } while (old != assumed);
  }
}

// Output of a scatter starts as a copy of its data (none when the memory plan made them one).
inline Status copy_data_to_output(const CudaKernelContext& ctx, const ops::TensorRef& data, const ops::TensorRef& y) {
  if (data.dtype != y.dtype || data.dims != y.dims)
    return ctx.error("output " + dims_to_string(y.dims) + " does not match data " + dims_to_string(data.dims));
  if (data.data != y.data && data.nbytes() > 0)
    SRT_CUDA(cudaMemcpyAsync(y.data, data.data, data.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
  return ok_status();
}

template <typename U, typename Addr>
__global__ void gather_by_addr(U* __restrict__ y, const U* __restrict__ x, Addr addr, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t off = addr(i);
    y[i] = off >= 0 ? x[off] : U(0);
  }
}

// y[i] = data[addr(i)] for every element of y (zeros where the index is out of range).
template <typename Addr>
Status launch_gather(const CudaKernelContext& ctx, const ops::TensorRef& y, const ops::TensorRef& data, Addr addr) {
  const int64_t n = y.numel();
  if (n == 0) return ok_status();
  return dispatch_by_size(data.dtype, ctx, [&]<typename U>() {
    gather_by_addr<U, Addr><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<U>(), data.as<const U>(), addr, n);
    SRT_CUDA_LAUNCH("gather_by_addr");
    return ok_status();
  });
}

template <typename T, bool kReduce, typename Addr>
__global__ void scatter_by_addr(T* y, const T* __restrict__ u, Addr addr, int64_t n, ops::ScatterReduction r) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t off = addr(i);
    if (off < 0) continue;
    if constexpr (kReduce) atomic_combine<T>(y + off, u[i], r);
    else y[off] = u[i];
  }
}

// y[addr(i)] = reduce(y[addr(i)], updates[i]) for every element of updates (skipped where the
// index is out of range); y already holds the data. Without a reduction, elements are moved as
// bytes and of repeated indices one wins (ONNX leaves which one undefined).
template <typename Addr>
Status launch_scatter(const CudaKernelContext& ctx, ops::ScatterReduction r, const ops::TensorRef& y,
                      const ops::TensorRef& updates, Addr addr) {
  if (updates.dtype != y.dtype)
    return ctx.error(std::string("updates are ") + dtype_name(updates.dtype) + ", data is " + dtype_name(y.dtype));
  const int64_t n = updates.numel();
  if (n == 0) return ok_status();
  if (r == ops::ScatterReduction::kNone)
    return dispatch_by_size(y.dtype, ctx, [&]<typename U>() {
      scatter_by_addr<U, false, Addr><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<U>(), updates.as<const U>(), addr, n, r);
      SRT_CUDA_LAUNCH("scatter_by_addr");
      return ok_status();
    });
  return cuda_dispatch<ops::kAll>(y.dtype, ctx.node().describe(), [&]<typename T>() {
    scatter_by_addr<T, true, Addr><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), updates.as<const T>(), addr, n, r);
    SRT_CUDA_LAUNCH("scatter_by_addr");
    return ok_status();
  });
}

}  // namespace streamrt::cuda
