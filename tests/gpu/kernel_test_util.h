// For GPU tests that call kernels directly: float16 / bfloat16 bit patterns to and from float and
// random operands of those types (to fill device memory and check results against double-precision
// references), and the device's resources as the kernels see them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "streamrt/types.h"

namespace streamrt::testing {

inline uint16_t to_bits(float f, DataType t) {
  if (t == DataType::kFloat16) return static_cast<__half_raw>(__float2half_rn(f)).x;
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(f)).x;
}

inline float from_bits(uint16_t b, DataType t) {
  if (t == DataType::kFloat16) {
    __half_raw r;
    r.x = b;
    return __half2float(__half(r));
  }
  __nv_bfloat16_raw r;
  r.x = b;
  return __bfloat162float(__nv_bfloat16(r));
}

// Random values in [-scale, scale], rounded to the type (bits) and back (floats).
inline std::vector<uint16_t> random_half(size_t count, float scale, DataType t, uint32_t seed,
                                         std::vector<double>* values) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<uint16_t> bits(count);
  values->resize(count);
  for (size_t i = 0; i < count; ++i) {
    bits[i] = to_bits(dist(rng), t);
    (*values)[i] = from_bits(bits[i], t);
  }
  return bits;
}

// The current device's SM count and compute capability (what the kernels choose by).
inline cuda::CudaResources device_resources() {
  cuda::CudaResources res;
  int device = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&res.sm_count, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&res.cc_major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&res.cc_minor, cudaDevAttrComputeCapabilityMinor, device), cudaSuccess);
  return res;
}

}  // namespace streamrt::testing
