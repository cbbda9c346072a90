// HannWindow / HammingWindow / BlackmanWindow (opset 17) on CUDA, mirroring
// src/ops/signal_windows.cc: the length comes from the host copy of the `size` shape input, each
// thread writes one point with the shared formula (ops::signal_window::value, in double).
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/signal_windows.h"

namespace streamrt::cuda {
namespace {

namespace sw = ops::signal_window;

template <typename T>
__global__ void window_fill(T* y, int64_t n, sw::Kind kind, double denom) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_acc<T>(static_cast<acc_t<T>>(sw::value(kind, i, denom)));
}

Status window_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || ctx.input(0).numel() != 1) return ctx.error("size must be a scalar");
  const Tensor* size = ctx.host_value(0);
  if (!size || size->numel() != 1) return internal_error(ctx.node().describe() + ": no host copy of size");
  SRT_ASSIGN_OR_RETURN(sw::Kind kind, sw::kind_of(ctx.node()));
  SRT_ASSIGN_OR_RETURN(DataType out, sw::output_dtype(ctx.node()));
  SRT_ASSIGN_OR_RETURN(int64_t n, sw::window_length(ctx.node(), size->dtype(), size->data()));
  SRT_ASSIGN_OR_RETURN(int64_t periodic, ctx.node().attr_int("periodic", 1));
  const ops::TensorRef& y = ctx.output(0);
  if (y.dims != Dims{n} || y.dtype != out)
    return ctx.error("output " + dims_to_string(y.dims) + " does not match the window length " + std::to_string(n));
  if (n == 0) return ok_status();
  const double denom = static_cast<double>(periodic != 0 ? n : n - 1);
  return cuda_dispatch<ops::kNumeric>(out, ctx.node().describe(), [&]<typename T>() {
    window_fill<T><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), n, kind, denom);
    SRT_CUDA_LAUNCH("window_fill");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(HannWindow, "HannWindow", window_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(HammingWindow, "HammingWindow", window_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(BlackmanWindow, "BlackmanWindow", window_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
