// ConstantOfShape (opset 9) on CUDA, mirroring src/ops/constant_of_shape.cc: the output (of the
// shape held by input 0, a shape input) is filled with the one element of the `value`
// attribute (default float32 0). The element's bytes travel by value in the kernel arguments.
#include <cstring>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/constant_of_shape.h"

namespace streamrt::cuda {
namespace {

template <typename U>
__global__ void fill_kernel(U* y, int64_t n, U v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = v;
}

Status constant_of_shape_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 'input' (the shape)");
  SRT_ASSIGN_OR_RETURN(Tensor value, ops::fill_value(ctx.node()));
  const ops::TensorRef& y = ctx.output(0);
  const Tensor* shape = ctx.host_value(0);
  if (!shape) return internal_error(ctx.node().describe() + ": no host copy of the shape input");
  SRT_ASSIGN_OR_RETURN(auto dims, shape->to_int64_vector());
  for (int64_t v : dims)
    if (v < 0) return ctx.error("shape " + dims_to_string(dims) + " has a negative dim");
  if (y.dims != Dims(dims) || y.dtype != value.dtype())
    return ctx.error("output " + dims_to_string(y.dims) + " does not match the requested shape " + dims_to_string(dims));
  const int64_t n = y.numel();
  if (n == 0) return ok_status();
  auto go = [&]<typename U>() {
    U v;
    std::memcpy(&v, value.data(), sizeof(U));
    fill_kernel<U><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<U>(), n, v);
    SRT_CUDA_LAUNCH("constant_of_shape fill_kernel");
    return ok_status();
  };
  return dispatch_by_size(y.dtype, ctx, go);
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(ConstantOfShape, "ConstantOfShape", constant_of_shape_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
