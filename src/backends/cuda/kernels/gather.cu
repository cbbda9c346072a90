// Gather on CUDA: output element (o, k, r) = data[o, indices[k], r] with `o` over the dims
// before the axis and `r` over the block after it. Indices (int32 / int64) are read on the
// device; negative ones count from the end as in src/ops/gather.cc.
//
// Out-of-range indices: the CPU kernel checks them and fails the step. Here the indices live
// only on the device and the step cannot fail after launch, so the kernel never reads out of
// bounds: the slices of an out-of-range index are written as zeros instead.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"
#include "ops/indexing.h"

namespace streamrt::cuda {
namespace {

// E is the copy unit; `block` is the slice after the axis in units of E.
template <typename E, typename Idx>
__global__ void gather_kernel(E* __restrict__ dst, const E* __restrict__ src, const Idx* __restrict__ indices,
                              int64_t dim, int64_t num_indices, int64_t block, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i % block;
    const int64_t t = i / block;
    const int64_t k = t % num_indices;
    const int64_t o = t / num_indices;
    int64_t idx = static_cast<int64_t>(indices[k]);
    if (idx < 0) idx += dim;
    dst[i] = (idx >= 0 && idx < dim) ? src[(o * dim + idx) * block + r] : E{};
  }
}

Status gather_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  const ops::TensorRef& data = ctx.input(0);
  const ops::TensorRef& indices = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  const size_t rank = data.dims.size();
  if (rank == 0) return ctx.error("data must have rank >= 1");
  if (!ops::is_index_type(indices.dtype)) return ctx.error("indices must be int32 or int64");
  SRT_ASSIGN_OR_RETURN(int64_t axis, ctx.node().attr_int("axis", 0));
  SRT_ASSIGN_OR_RETURN(int64_t a, ops::normalize_axis(ctx.node(), axis, static_cast<int64_t>(rank)));
  const size_t ax = static_cast<size_t>(a);
  const int64_t dim = data.dims[ax];
  Dims expect(data.dims.begin(), data.dims.begin() + a);
  expect.insert(expect.end(), indices.dims.begin(), indices.dims.end());
  expect.insert(expect.end(), data.dims.begin() + a + 1, data.dims.end());
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, data.dtype, expect));
  if (y.numel() == 0) return ok_status();
  const int64_t num_indices = indices.numel();
  const int64_t block_bytes = ops::dims_product(data.dims, ax + 1, rank) * static_cast<int64_t>(dtype_size(data.dtype));
  // Move each slice in the widest unit that its size and both base addresses allow.
  const size_t width =
      copy_width(address_bits(data.data) | address_bits(y.data) | static_cast<uint64_t>(block_bytes));
  const int64_t block = block_bytes / static_cast<int64_t>(width);
  const int64_t n = y.numel() * static_cast<int64_t>(dtype_size(data.dtype)) / static_cast<int64_t>(width);
  return by_width(width, [&]<typename E>() {
    E* dst = y.as<E>();
    const E* src = data.as<const E>();
    if (indices.dtype == DataType::kInt64)
      gather_kernel<E, int64_t><<<grid_for(n), 256, 0, ctx.stream()>>>(dst, src, indices.as<const int64_t>(), dim,
                                                                       num_indices, block, n);
    else
      gather_kernel<E, int32_t><<<grid_for(n), 256, 0, ctx.stream()>>>(dst, src, indices.as<const int32_t>(), dim,
                                                                       num_indices, block, n);
    SRT_CUDA_LAUNCH("gather_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Gather, "Gather", gather_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
