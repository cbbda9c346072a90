// The CUDA kernel interface. Each op's CUDA kernel lives in src/backends/cuda/kernels/<op>.cu
// and registers itself:
//   STREAMRT_REGISTER_CUDA_KERNEL(Relu, "Relu", relu_cuda, cuda_dtypes(ops::kFloats | ops::kSignedInts));
// with the data types it takes for the step's main tensor (cuda_kernel_registry.h): an engine
// runs a step of another type on the host, decided at load.
// A kernel gets the same node and shapes as the CPU kernel (outputs already sized by the op's
// shape rule), device pointers for inputs and outputs, and the stream to launch on. Inputs the
// op reads as shape tensors (OpSchema::shape_inputs) also come as host copies: host_value(i).
// Kernels launch asynchronously on ctx.stream() and never synchronize.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel_registry.h"
#include "ops/op.h"

namespace streamrt::cuda {

// Per-context handles and scratch shared by kernels.
struct CudaResources {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  void* workspace = nullptr;  // device scratch for cuBLASLt / cuDNN
  size_t workspace_size = 0;
  uint64_t workspace_generation = 0;  // bumped when the workspace moves (captured graphs hold its address)
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;  // compute capability (9: thread-block clusters; 9.0: sm_90a code)
  // Grows the workspace to at least `bytes` (synchronizes the stream when it must reallocate).
  Status ensure_workspace(size_t bytes);
};

class CudaKernelContext : public ops::KernelContext {
 public:
  CudaKernelContext(const ir::Node& node, std::span<const ops::TensorRef> inputs,
                    std::span<const ops::TensorRef> outputs, std::span<const Tensor* const> host_values,
                    CudaResources& res)
      : ops::KernelContext(node, inputs, outputs), host_values_(host_values), res_(res) {}

  cudaStream_t stream() const { return res_.stream; }
  CudaResources& resources() const { return res_; }
  // Host copy of input i when the op declares it a shape input, else nullptr.
  const Tensor* host_value(size_t i) const { return i < host_values_.size() ? host_values_[i] : nullptr; }

 private:
  std::span<const Tensor* const> host_values_;
  CudaResources& res_;
};

struct CudaKernelRegistrar {
  CudaKernelRegistrar(const char* op_type, CudaKernelFn fn, ops::DTypeMask dtypes) {
    CudaKernelRegistry::global().add(op_type, fn, dtypes);
  }
};

// Grid size for `n` elements at `block` threads, capped so huge tensors use grid-stride loops.
inline unsigned grid_for(int64_t n, int block = 256) {
  int64_t g = (n + block - 1) / block;
  return static_cast<unsigned>(g < 1 ? 1 : (g > 65535 * 8 ? 65535 * 8 : g));
}

}  // namespace streamrt::cuda

#define STREAMRT_REGISTER_CUDA_KERNEL(id, op_type, fn, dtypes) \
  static ::streamrt::cuda::CudaKernelRegistrar _srt_cuda_kernel_##id(op_type, fn, dtypes)
