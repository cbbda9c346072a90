// Shape (with the opset-15 start/end slice) and Size on CUDA: the int64 values are known on the
// host (the input's static dims), so they travel to the device as kernel arguments (never as
// an async copy from host memory that is gone when the copy runs).
#include <algorithm>

#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"
#include "ops/shape.h"

namespace streamrt::cuda {
namespace {

constexpr int kValuesPerLaunch = 8;

struct Int64Values {
  int64_t v[kValuesPerLaunch];
};

__global__ void write_values_kernel(int64_t* y, Int64Values vals, int n) {
  const int i = threadIdx.x;
  if (i < n) y[i] = vals.v[i];
}

// Writes `values` to device memory `y`, kValuesPerLaunch per tiny launch.
Status write_int64_values(int64_t* y, const std::vector<int64_t>& values, cudaStream_t stream) {
  for (size_t first = 0; first < values.size(); first += kValuesPerLaunch) {
    const int n = static_cast<int>(std::min<size_t>(kValuesPerLaunch, values.size() - first));
    Int64Values vals{};
    for (int i = 0; i < n; ++i) vals.v[i] = values[first + static_cast<size_t>(i)];
    write_values_kernel<<<1, kValuesPerLaunch, 0, stream>>>(y + first, vals, n);
    SRT_CUDA_LAUNCH("write_values_kernel");
  }
  return ok_status();
}

Status shape_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const Dims& dims = ctx.input(0).dims;
  SRT_ASSIGN_OR_RETURN(auto range, ops::shape_range(ctx.node(), static_cast<int64_t>(dims.size())));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, DataType::kInt64, {range.second - range.first}));
  std::vector<int64_t> values(dims.begin() + range.first, dims.begin() + range.second);
  return write_int64_values(ctx.output(0).as<int64_t>(), values, ctx.stream());
}

Status size_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, DataType::kInt64, {}));
  return write_int64_values(ctx.output(0).as<int64_t>(), {ctx.input(0).numel()}, ctx.stream());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Shape, "Shape", shape_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(Size, "Size", size_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
