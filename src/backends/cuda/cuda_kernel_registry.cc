#include <algorithm>

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

CudaKernelRegistry& CudaKernelRegistry::global() {
  static CudaKernelRegistry* r = new CudaKernelRegistry();  // used during static init
  return *r;
}

void CudaKernelRegistry::add(const std::string& op_type, CudaKernelFn fn) {
  if (find(op_type)) {
    errors_.push_back("CUDA kernel for '" + op_type + "' registered twice");
    return;
  }
  kernels_.emplace_back(op_type, fn);
}

CudaKernelFn CudaKernelRegistry::find(const std::string& op_type) const {
  for (const auto& [name, fn] : kernels_)
    if (name == op_type) return fn;
  return nullptr;
}

std::vector<std::string> CudaKernelRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& k : kernels_) out.push_back(k.first);
  std::sort(out.begin(), out.end());
  return out;
}

Status CudaResources::ensure_workspace(size_t bytes) {
  if (bytes <= workspace_size) return ok_status();
  if (workspace) {
    SRT_CUDA(cudaStreamSynchronize(stream));
    SRT_CUDA(cudaFree(workspace));
    workspace = nullptr;
    workspace_size = 0;
  }
  SRT_CUDA(cudaMalloc(&workspace, bytes));
  workspace_size = bytes;
  return ok_status();
}

}  // namespace streamrt::cuda
