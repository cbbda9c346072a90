// Reshape, Flatten, Squeeze and Unsqueeze on CUDA: new dims over the same bytes, so the kernel
// is a device-to-device copy (as ops::copy_bytes_cpu, with the same checks), or nothing at all
// when the memory plan made the output a view of the input (builder/lowering.cc).
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

Status copy_bytes_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.dtype != y.dtype || x.numel() != y.numel())
    return ctx.error("cannot copy " + dims_to_string(x.dims) + " into " + dims_to_string(y.dims));
  // The same buffer (an aliasing plan) needs no copy.
  if (x.nbytes() && x.data != y.data)
    SRT_CUDA(cudaMemcpyAsync(y.data, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Reshape, "Reshape", copy_bytes_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(Flatten, "Flatten", copy_bytes_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(Squeeze, "Squeeze", copy_bytes_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(Unsqueeze, "Unsqueeze", copy_bytes_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
