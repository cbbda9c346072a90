// OneHot on CUDA, mirroring src/ops/one_hot.cc: one thread per output element (o, d, i) reads
// index (o, i), converts it as the CPU kernel does (ops/one_hot.h) and writes values[1] (on)
// where it lights slot d, values[0] (off) elsewhere, moving values by element size. depth is a
// shape input, so its host copy gives the output's shape.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/data_movement.h"
#include "ops/one_hot.h"

namespace streamrt::cuda {
namespace {

template <typename U, typename T>
__global__ void one_hot_kernel(U* __restrict__ y, const T* __restrict__ idx, const U* __restrict__ values,
                               int64_t depth, int64_t inner, bool wrap, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e % inner;
    const int64_t t = e / inner;
    const int64_t d = t % depth;
    const int64_t o = t / depth;
    const int64_t slot = ops::one_hot_slot(ops::one_hot_index(to_acc(idx[o * inner + i])), depth, wrap);
    y[e] = values[slot == d ? 1 : 0];
  }
}

Status one_hot_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 3));
  const ops::TensorRef& idx = ctx.input(0);
  const ops::TensorRef& values = ctx.input(2);
  const ops::TensorRef& y = ctx.output(0);
  const Tensor* d = ctx.host_value(1);
  if (!d) return internal_error(ctx.node().describe() + ": no host copy of depth");
  SRT_ASSIGN_OR_RETURN(int64_t depth,
                       ops::one_hot_depth(ctx.node(), StatusCode::kInvalidArgument, d->dtype(), d->data(), d->numel()));
  SRT_ASSIGN_OR_RETURN(int64_t axis, ops::one_hot_axis(ctx.node(), static_cast<int64_t>(idx.dims.size())));
  if (values.numel() != 2) return ctx.error("values must hold [off, on], got shape " + dims_to_string(values.dims));
  Dims out = idx.dims;
  out.insert(out.begin() + axis, depth);
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, values.dtype, out));
  const int64_t n = y.numel();
  if (n == 0) return ok_status();
  const int64_t inner = ops::dims_product(idx.dims, static_cast<size_t>(axis), idx.dims.size());
  const bool wrap = ctx.opset() >= 11;
  return cuda_dispatch<ops::kNumeric>(idx.dtype, ctx.node().describe() + " indices", [&]<typename T>() {
    return dispatch_by_size(values.dtype, ctx, [&]<typename U>() {
      one_hot_kernel<U, T><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<U>(), idx.as<const T>(), values.as<const U>(),
                                                                  depth, inner, wrap, n);
      SRT_CUDA_LAUNCH("one_hot_kernel");
      return ok_status();
    });
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(OneHot, "OneHot", one_hot_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
