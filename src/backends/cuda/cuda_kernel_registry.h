// The CUDA kernel registry, without the CUDA headers: which ops have a CUDA kernel and the data
// types each takes. An engine decides at load which steps run on the device (place_steps); a
// step whose op has no kernel, or whose main tensor (OpSchema::dtype_input) has a type its
// kernel does not list, runs on the host instead, decided then, never failing mid-run.
// `streamrt ops` and the unit tests read it too, none of which needs a GPU.
#pragma once

#include <string>
#include <vector>

#include "ops/op.h"

namespace streamrt::cuda {

class CudaKernelContext;
using CudaKernelFn = Status (*)(CudaKernelContext&);

// Opt-in bit for cuda_dispatch (cuda_types.cuh): the kernel also handles float64, int16,
// uint16, uint32 and uint64. Those were added to the DTypeSets after most kernels were
// written; a kernel that does not name this bit gets kUnsupported for them (never an untested
// instantiation).
inline constexpr unsigned kCudaWideTypes = 1u << 8;

// The types cuda_dispatch<allowed> takes (the same rule, type by type): what a kernel that
// dispatches its main tensor so registers.
constexpr ops::DTypeMask cuda_dtypes(unsigned allowed) {
  using namespace streamrt::ops;
  DTypeMask m = 0;
  const bool wide = (allowed & kCudaWideTypes) != 0;
  if (allowed & kFloats) m |= dtypes(kFloats);
  if (wide && (allowed & kFloat64)) m |= dtype_bit(DataType::kFloat64);
  if (allowed & kSignedInts)
    m |= dtype_mask({DataType::kInt64, DataType::kInt32, DataType::kInt8}) | (wide ? dtype_bit(DataType::kInt16) : 0);
  if (allowed & kUnsigned)
    m |= dtype_bit(DataType::kUInt8) |
         (wide ? dtype_mask({DataType::kUInt16, DataType::kUInt32, DataType::kUInt64}) : 0);
  if (allowed & kBools) m |= dtype_bit(DataType::kBool);
  return m;
}

struct CudaKernelEntry {
  std::string op_type;
  CudaKernelFn fn = nullptr;
  ops::DTypeMask dtypes = 0;  // of the step's main tensor (OpSchema::dtype_input)
};

class CudaKernelRegistry {
 public:
  static CudaKernelRegistry& global();
  void add(const std::string& op_type, CudaKernelFn fn, ops::DTypeMask dtypes);
  CudaKernelFn find(const std::string& op_type) const;
  const CudaKernelEntry* entry(const std::string& op_type) const;
  std::vector<std::string> op_types() const;
  const std::vector<CudaKernelEntry>& entries() const { return kernels_; }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<CudaKernelEntry> kernels_;
  std::vector<std::string> errors_;
};

// The load-time choice for one step of a CUDA engine: its kernel, or null when it runs on the
// host, with the reason in *why: its op has no CUDA kernel, or `main` (the type of its main
// tensor, ops::main_dtype) is not among the kernel's types.
CudaKernelFn cuda_kernel_for(const ir::Node& step, DataType main, std::string* why);

}  // namespace streamrt::cuda
