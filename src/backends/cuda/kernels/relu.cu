// Relu on CUDA: y = max(x, 0), grid-stride loop.
#include "backends/cuda/kernels/cuda_types.cuh"

namespace streamrt::cuda {
namespace {

template <typename T>
__global__ void relu_kernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    acc_t<T> v = to_acc(x[i]);
    y[i] = from_acc<T>(v > acc_t<T>(0) ? v : acc_t<T>(0));
  }
}

Status relu_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  const int64_t n = x.numel();
  if (n == 0) return ok_status();
  return cuda_dispatch<ops::kFloats | ops::kSignedInts>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    relu_kernel<T><<<grid_for(n), 256, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), n);
    SRT_CUDA_LAUNCH("relu_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Relu, "Relu", relu_cuda, cuda_dtypes(ops::kFloats | ops::kSignedInts));

}  // namespace streamrt::cuda
