#include <algorithm>

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

CudaKernelRegistry& CudaKernelRegistry::global() {
  static CudaKernelRegistry* r = new CudaKernelRegistry();  // used during static init
  return *r;
}

void CudaKernelRegistry::add(const std::string& op_type, CudaKernelFn fn, ops::DTypeMask dtypes) {
  if (find(op_type)) {
    errors_.push_back("CUDA kernel for '" + op_type + "' registered twice");
    return;
  }
  if (dtypes == 0) errors_.push_back("CUDA kernel for '" + op_type + "' lists no data types");
  kernels_.push_back(CudaKernelEntry{op_type, fn, dtypes});
}

const CudaKernelEntry* CudaKernelRegistry::entry(const std::string& op_type) const {
  for (const auto& k : kernels_)
    if (k.op_type == op_type) return &k;
  return nullptr;
}

CudaKernelFn CudaKernelRegistry::find(const std::string& op_type) const {
  const CudaKernelEntry* e = entry(op_type);
  return e ? e->fn : nullptr;
}

std::vector<std::string> CudaKernelRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& k : kernels_) out.push_back(k.op_type);
  std::sort(out.begin(), out.end());
  return out;
}

CudaKernelFn cuda_kernel_for(const ir::Node& step, DataType main, std::string* why) {
  const CudaKernelEntry* e = step.domain.empty() ? CudaKernelRegistry::global().entry(step.op_type) : nullptr;
  if (!e) {
    if (why) *why = "no CUDA kernel";
    return nullptr;
  }
  if (main != DataType::kUndefined && !ops::has_dtype(e->dtypes, main)) {
    if (why) *why = std::string("the CUDA kernel does not take ") + dtype_name(main);
    return nullptr;
  }
  return e->fn;
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
  ++workspace_generation;
  return ok_status();
}

}  // namespace streamrt::cuda
