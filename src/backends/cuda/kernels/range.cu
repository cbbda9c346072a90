// Range (opset 11) on CUDA, mirroring src/ops/range.cc: output[i] = start + i * delta for
// i < max(ceil((limit - start) / delta), 0). start / limit / delta are shape inputs, so their
// host copies give the length (checked against the output) and the scalars passed by value.
#include <cmath>

#include "backends/cuda/kernels/cuda_types.cuh"

namespace streamrt::cuda {
namespace {

constexpr int64_t kMaxRangeLength = int64_t{1} << 40;  // as range.cc

Result<int64_t> int_length(const ir::Node& node, int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0) return node.error(StatusCode::kInvalidArgument, "delta is 0");
  const __int128 diff = static_cast<__int128>(limit) - start;  // 128-bit: cannot overflow
  if (diff == 0 || (diff > 0) != (delta > 0)) return int64_t{0};
  const __int128 a = diff < 0 ? -diff : diff;
  const __int128 d = delta < 0 ? -static_cast<__int128>(delta) : delta;
  const __int128 n = (a + d - 1) / d;
  if (n > kMaxRangeLength) return node.error(StatusCode::kInvalidArgument, "length is too large (over 2^40 elements)");
  return static_cast<int64_t>(n);
}

Result<int64_t> float_length(const ir::Node& node, float start, float limit, float delta) {
  if (delta == 0.f) return node.error(StatusCode::kInvalidArgument, "delta is 0");
  // As onnxruntime: the difference in the input type, the division in double.
  const double n = std::ceil(static_cast<double>(limit - start) / static_cast<double>(delta));
  if (std::isnan(n)) return node.error(StatusCode::kInvalidArgument, "length is not a number");
  if (n <= 0) return int64_t{0};
  if (n > static_cast<double>(kMaxRangeLength))
    return node.error(StatusCode::kInvalidArgument, "length " + std::to_string(n) + " is too large");
  return static_cast<int64_t>(n);
}

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
  int64_t n = 0;
  if constexpr (std::is_integral_v<T>) {
    SRT_ASSIGN_OR_RETURN(n, int_length(ctx.node(), start, limit, delta));
  } else {
    SRT_ASSIGN_OR_RETURN(n, float_length(ctx.node(), start, limit, delta));
  }
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

STREAMRT_REGISTER_CUDA_KERNEL(Range, "Range", range_cuda);

}  // namespace streamrt::cuda
