// Device-side element types and dtype dispatch for CUDA kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "backends/cuda/cuda_kernel.h"
#include "ops/common.h"  // DTypeSet bits (kFloats, kSignedInts, ...)

namespace streamrt::cuda {

// Arithmetic type for a storage type: float for __half / __nv_bfloat16.
template <typename T> struct Acc { using type = T; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };
template <typename T> using acc_t = typename Acc<T>::type;

template <typename T> __device__ __forceinline__ acc_t<T> to_acc(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return v;
}
template <typename T> __device__ __forceinline__ T from_acc(acc_t<T> v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return v;
}

// Whether a device pointer allows 16-byte vector accesses.
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The current device's shared memory: the most a block may opt in to, and an SM's total.
struct SmemLimits {
  int block_optin = 0, per_sm = 0;
};
inline Result<SmemLimits> smem_limits() {
  int device = 0;
  SmemLimits l;
  SRT_CUDA(cudaGetDevice(&device));
  SRT_CUDA(cudaDeviceGetAttribute(&l.block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  SRT_CUDA(cudaDeviceGetAttribute(&l.per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  return l;
}

// A kernel whose dynamic shared memory goes above the default 48 KiB: raises its limit to `bytes`
// once per device, before its first launch there (an eager run precedes any graph capture).
template <auto kKernel>
Status allow_dynamic_smem(int bytes) {
  static std::atomic<uint64_t> done{0};  // bit per device
  int device = 0;
  SRT_CUDA(cudaGetDevice(&device));
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit && (done.load() & bit)) return ok_status();
  SRT_CUDA(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done.fetch_or(bit);
  return ok_status();
}

// Calls f.template operator()<T>() with the device storage type for `t` (bool for kBool); the
// types outside `Allowed` (kCudaWideTypes: cuda_kernel_registry.h) give kUnsupported, as
// cuda_dtypes(Allowed) says, which a kernel's registration lists.
template <unsigned Allowed, typename F>
Status cuda_dispatch(DataType t, const std::string& what, F&& f) {
  using namespace streamrt::ops;
  constexpr bool kWide = (Allowed & kCudaWideTypes) != 0;
  switch (t) {
    case DataType::kFloat32: if constexpr ((Allowed & kFloats) != 0) return f.template operator()<float>(); break;
    case DataType::kFloat16: if constexpr ((Allowed & kFloats) != 0) return f.template operator()<__half>(); break;
    case DataType::kBFloat16: if constexpr ((Allowed & kFloats) != 0) return f.template operator()<__nv_bfloat16>(); break;
    case DataType::kInt64: if constexpr ((Allowed & kSignedInts) != 0) return f.template operator()<int64_t>(); break;
    case DataType::kInt32: if constexpr ((Allowed & kSignedInts) != 0) return f.template operator()<int32_t>(); break;
    case DataType::kInt8: if constexpr ((Allowed & kSignedInts) != 0) return f.template operator()<int8_t>(); break;
    case DataType::kUInt8: if constexpr ((Allowed & kUnsigned) != 0) return f.template operator()<uint8_t>(); break;
    case DataType::kBool: if constexpr ((Allowed & kBools) != 0) return f.template operator()<bool>(); break;
    case DataType::kFloat64: if constexpr (kWide && (Allowed & kFloat64) != 0) return f.template operator()<double>(); break;
    case DataType::kInt16: if constexpr (kWide && (Allowed & kSignedInts) != 0) return f.template operator()<int16_t>(); break;
    case DataType::kUInt16: if constexpr (kWide && (Allowed & kUnsigned) != 0) return f.template operator()<uint16_t>(); break;
    case DataType::kUInt32: if constexpr (kWide && (Allowed & kUnsigned) != 0) return f.template operator()<uint32_t>(); break;
    case DataType::kUInt64: if constexpr (kWide && (Allowed & kUnsigned) != 0) return f.template operator()<uint64_t>(); break;
    default: break;
  }
  return unsupported(what + ": data type " + dtype_name(t) + " is not supported on CUDA");
}

// For kernels that only move elements: calls f.template operator()<U>() with the unsigned type of
// `t`'s element size (uint8_t .. uint64_t).
template <typename F>
Status dispatch_by_size(DataType t, const ops::KernelContext& ctx, F&& f) {
  switch (dtype_size(t)) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    default: return ctx.unsupported(std::string("data type ") + dtype_name(t));
  }
}

}  // namespace streamrt::cuda
