// Expand (opset 8) on CUDA, mirroring src/ops/expand.cc: numpy (bidirectional) broadcast of the
// input to the `shape` input (a shape input: its host copy). Elements are copied by size, so
// every data type works. Same element count: a plain device copy; otherwise one thread per
// output element reads the input through its broadcast strides (axes merged where possible).
#include "backends/cuda/kernels/norm_util.cuh"

namespace streamrt::cuda {
namespace {

template <typename U>
__global__ void expand_kernel(const U* x, U* y, int64_t n, norm::StridedSpace in) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[in.offset(i)];
}

Status expand_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(1)) return ctx.error("missing input 'shape'");
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  const Tensor* sv = ctx.host_value(1);
  if (!sv) return internal_error(ctx.node().describe() + ": no host copy of the shape input");
  SRT_ASSIGN_OR_RETURN(auto shape, sv->to_int64_vector());
  for (int64_t v : shape)
    if (v < 0) return ctx.error("shape " + dims_to_string(shape) + " has a negative dim");
  auto want = ops::broadcast_dims(x.dims, shape);
  if (!want.ok()) return ctx.error(want.status().message());
  if (*want != y.dims || y.dtype != x.dtype)
    return ctx.error("output " + dims_to_string(y.dims) + " differs from the expanded shape " + dims_to_string(*want));
  const int64_t n = y.numel();
  if (n == 0) return ok_status();
  if (n == x.numel()) {
    // Only size-1 axes were added or kept: the bytes are the same.
    if (y.data != x.data) SRT_CUDA(cudaMemcpyAsync(y.data, x.data, y.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return ok_status();
  }
  norm::StridedSpace in;
  if (!norm::make_space(y.dims, ops::broadcast_strides(x.dims, y.dims), &in))
    return ctx.unsupported("expanding " + dims_to_string(x.dims) + " to " + dims_to_string(y.dims) +
                           " alternates broadcast and copied axes too often");
  auto go = [&]<typename U>() {
    expand_kernel<U><<<grid_for(n), 256, 0, ctx.stream()>>>(x.as<const U>(), y.as<U>(), n, in);
    SRT_CUDA_LAUNCH("expand_kernel");
    return ok_status();
  };
  return dispatch_by_size(x.dtype, ctx, go);
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Expand, "Expand", expand_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
