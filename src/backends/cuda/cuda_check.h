// Turning CUDA runtime / cuBLASLt / cuDNN results into Status values that name the call.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "streamrt/status.h"

namespace streamrt::cuda {

inline Status cuda_status(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return ok_status();
  std::string msg = std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  return e == cudaErrorMemoryAllocation ? out_of_memory(msg) : device_error(msg);
}
inline Status cublas_status(cublasStatus_t e, const char* call) {
  if (e == CUBLAS_STATUS_SUCCESS) return ok_status();
  std::string msg = std::string(call) + " failed: cuBLAS status " + std::to_string(static_cast<int>(e));
  if (e == CUBLAS_STATUS_ALLOC_FAILED) return out_of_memory(msg);
  if (e == CUBLAS_STATUS_NOT_SUPPORTED) return unsupported(msg);
  return device_error(msg);
}
inline Status cudnn_status(cudnnStatus_t e, const char* call) {
  if (e == CUDNN_STATUS_SUCCESS) return ok_status();
  std::string msg = std::string(call) + " failed: " + cudnnGetErrorString(e);
  if (e == CUDNN_STATUS_NOT_SUPPORTED) return unsupported(msg);
  return device_error(msg);
}

}  // namespace streamrt::cuda

// Each evaluates the call once and returns a Status naming it from the enclosing function.
#define SRT_CUDA(call) SRT_RETURN_IF_ERROR(::streamrt::cuda::cuda_status((call), #call))
#define SRT_CUBLAS(call) SRT_RETURN_IF_ERROR(::streamrt::cuda::cublas_status((call), #call))
#define SRT_CUDNN(call) SRT_RETURN_IF_ERROR(::streamrt::cuda::cudnn_status((call), #call))
// After a kernel launch: launch-configuration errors surface here.
#define SRT_CUDA_LAUNCH(what) SRT_RETURN_IF_ERROR(::streamrt::cuda::cuda_status(cudaGetLastError(), what))
