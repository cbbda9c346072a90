// Range (opset 11) on CUDA, mirroring src/ops/range.cc: output[i] = start + i * delta for
// i < max(ceil((limit - start) / delta), 0). start / limit / delta are shape inputs, so their
// host copies give the length (ops::range_length, the CPU kernel's own rule; checked against the
// output) and the scalars passed by value.
#include <cmath>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/range.h"

namespace streamrt::cuda {
namespace {

template <typename T>
__global__ void range_fill(T* y, int64_t n, T start, T delta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_integral_v<T>) {
      // Modular arithmetic as on the CPU: every produced value lies in [start, limit).
      y[i] = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(int64_t(start)) +
                                                 static_cast<uint64_t>(i) * static_cast<uint64_t>(int64_t(delta))));
    } else {
      // Explicit roundings: no fused multiply-add, so the values match the CPU kernel's bits.
      y[i] = __fadd_rn(start, __fmul_rn(static_cast<float>(i), delta));
    }
  }
}

template <typename T>
Status run(CudaKernelContext& ctx, const Tensor* const v[3]) {
  const T start = *static_cast<const T*>(v[0]->data());
  const T limit = *static_cast<const T*>(v[1]->data());
  const T delta = *static_cast<const T*>(v[2]->data());
  SRT_ASSIGN_OR_RETURN(int64_t n, ops::range_length(ctx.node(), ctx.input(0).dtype, &start, &limit, &delta));
  const ops::TensorRef& y = ctx.output(0);
  if (y.dims != Dims{n} || y.dtype != ctx.input(0).dtype)
    return ctx.error("output shape " + dims_to_string(y.dims) + " differs from the range length " + std::to_string(n));
  if (n == 0) return ok_status();
  range_fill<T><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), n, start, delta);
  SRT_CUDA_LAUNCH("range_fill");
  return ok_status();
}

const char* const kNames[] = {"start", "limit", "delta"};

Status range_cuda(CudaKernelContext& ctx) {
  const Tensor* v[3];
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i) || ctx.input(i).numel() != 1 || ctx.input(i).dtype != ctx.input(0).dtype)
      return ctx.error(std::string(kNames[i]) + " must be a scalar of start's type");
    v[i] = ctx.host_value(i);
    if (!v[i] || v[i]->numel() != 1 || v[i]->dtype() != ctx.input(0).dtype)
      return internal_error(ctx.node().describe() + ": no host copy of " + kNames[i]);
  }
  switch (ctx.input(0).dtype) {
    case DataType::kFloat32: return run<float>(ctx, v);
    case DataType::kInt32: return run<int32_t>(ctx, v);
    case DataType::kInt64: return run<int64_t>(ctx, v);
    default: return ctx.unsupported(std::string("data type ") + dtype_name(ctx.input(0).dtype));
  }
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Range, "Range", range_cuda, ops::dtype_mask({DataType::kFloat32, DataType::kInt32,
                              DataType::kInt64}));

}  // namespace streamrt::cuda
