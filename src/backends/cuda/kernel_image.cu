// A GPU older than every architecture in the build (or one the PTX cannot target) would fail at
// its first kernel launch with "no kernel image"; asking the runtime about one trivial kernel
// finds that out when the backend is first used, with a message that says how to fix it.
#include "backends/cuda/kernel_image.h"

#include <cuda_runtime.h>

#include <string>

#ifndef STREAMRT_CUDA_ARCHS
#define STREAMRT_CUDA_ARCHS "unknown"
#endif

namespace streamrt::cuda {
namespace {

__global__ void probe_kernel() {}

}  // namespace

const char* built_architectures() { return STREAMRT_CUDA_ARCHS; }

Status check_kernel_image() {
  cudaFuncAttributes attrs{};
  const cudaError_t e = cudaFuncGetAttributes(&attrs, probe_kernel);
  if (e == cudaSuccess) return ok_status();
  cudaGetLastError();  // not sticky: a later call must not see it
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return unsupported("this GPU is sm_" + std::to_string(major) + std::to_string(minor) +
                     " and streamrt's CUDA kernels were built for " + built_architectures() + " (" +
                     cudaGetErrorString(e) + "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
                     std::to_string(major) + std::to_string(minor));
}

}  // namespace streamrt::cuda
