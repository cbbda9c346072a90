// ReverseSequence on CUDA, mirroring src/ops/reverse_sequence.cc: one thread per element (i0,
// i1, r) copies it from its source time step, by element size. sequence_lens stays on the
// device, so a length outside [0, time length] is clamped into it (the CPU kernel fails the
// step instead): never an access out of bounds.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/data_movement.h"
#include "ops/reverse_sequence.h"

namespace streamrt::cuda {
namespace {

template <typename U>
__global__ void reverse_sequence_kernel(U* __restrict__ y, const U* __restrict__ x, const int64_t* __restrict__ lens,
                                        int64_t d1, int64_t inner, int64_t steps, bool time_first, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e % inner;
    const int64_t i1 = (e / inner) % d1;
    const int64_t i0 = e / inner / d1;
    const int64_t t = time_first ? i0 : i1;
    const int64_t len = min(max(lens[time_first ? i1 : i0], int64_t{0}), steps);
    const int64_t from = t < len ? len - 1 - t : t;
    y[e] = x[((time_first ? from : i0) * d1 + (time_first ? i1 : from)) * inner + r];
  }
}

Status reverse_sequence_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& lens = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  if (lens.dtype != DataType::kInt64) return ctx.error("sequence_lens must be int64");
  SRT_ASSIGN_OR_RETURN(ops::SequenceAxes axes, ops::sequence_axes(ctx.node()));
  SRT_RETURN_IF_ERROR(ops::check_sequence_dims(ctx.node(), StatusCode::kInvalidArgument, x.dims, lens.dims, axes));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, x.dims));
  const int64_t n = y.numel();
  if (n == 0) return ok_status();
  const int64_t inner = ops::dims_product(x.dims, 2, x.dims.size());
  const int64_t steps = x.dims[static_cast<size_t>(axes.time)];
  return dispatch_by_size(x.dtype, ctx, [&]<typename U>() {
    reverse_sequence_kernel<U><<<grid_for(n), 256, 0, ctx.stream()>>>(
        y.as<U>(), x.as<const U>(), lens.as<const int64_t>(), x.dims[1], inner, steps, axes.time == 0, n);
    SRT_CUDA_LAUNCH("reverse_sequence_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(ReverseSequence, "ReverseSequence", reverse_sequence_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
