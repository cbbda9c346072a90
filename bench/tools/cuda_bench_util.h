// Shared by the CUDA kernel benches in bench/tools (few_row_bench, group_gemm_bench): a CUDA call that
// must succeed, comma-separated integer lists, 16-bit values copied to the device, and the device's
// resources as the kernels see them.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"

#define CHECK_CUDA(x)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "error: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

namespace streamrt::bench {

// "1,2,4" -> {1, 2, 4}; std::invalid_argument / std::out_of_range on anything else.
inline std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  for (size_t i = 0; i < s.size();) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    v.push_back(std::stoi(s.substr(i, j - i)));
    i = j + 1;
  }
  return v;
}

// A device copy of `h` (16-bit floats as their bits); the caller frees it.
inline void* to_device(const std::vector<uint16_t>& h) {
  void* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, h.size() * 2));
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  return d;
}

// The current device's SM count and compute capability, and a stream of its own.
inline cuda::CudaResources device_resources() {
  cuda::CudaResources res;
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&res.sm_count, cudaDevAttrMultiProcessorCount, device));
  CHECK_CUDA(cudaDeviceGetAttribute(&res.cc_major, cudaDevAttrComputeCapabilityMajor, device));
  CHECK_CUDA(cudaDeviceGetAttribute(&res.cc_minor, cudaDevAttrComputeCapabilityMinor, device));
  CHECK_CUDA(cudaStreamCreate(&res.stream));
  return res;
}

}  // namespace streamrt::bench
