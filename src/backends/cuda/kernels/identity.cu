// Identity and Dropout (inference only) on CUDA: a device-to-device copy on the stream.
// Mirrors src/ops/identity.cc: Dropout's optional mask output is all ones (bool since opset
// 10, the input's type before); a true training_mode input (opset 12) is kUnsupported. The
// op declares training_mode a shape input, so its value arrives as a host copy (free for a
// constant; a graph input costs a one-byte copy) and the check needs no device sync here.
#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

constexpr int kRatioAsInputSince = 12;

Status copy_input0(CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input 0 and output 0");
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.dtype != y.dtype || x.numel() != y.numel())
    return ctx.error("output " + std::string(dtype_name(y.dtype)) + " " + dims_to_string(y.dims) +
                     " does not match input " + dtype_name(x.dtype) + " " + dims_to_string(x.dims));
  if (x.data != y.data && x.nbytes() > 0)
    SRT_CUDA(cudaMemcpyAsync(y.data, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
  return ok_status();
}

Status identity_cuda(CudaKernelContext& ctx) { return copy_input0(ctx); }

template <typename T>
struct OneFn {
  __device__ __forceinline__ T operator()() const { return from_acc<T>(acc_t<T>(1)); }
};

Status dropout_cuda(CudaKernelContext& ctx) {
  if (ctx.opset() >= kRatioAsInputSince && ctx.has_input(2)) {
    const Tensor* t = ctx.host_value(2);
    if (!t) return internal_error(ctx.node().describe() + ": training_mode has no host copy");
    if (t->dtype() != DataType::kBool) return ctx.error("training_mode must be bool");
    const auto* p = t->data_as<uint8_t>();
    for (int64_t i = 0; i < t->numel(); ++i)
      if (p[i] != 0) return ctx.unsupported("training_mode = true is not supported (inference only)");
  }
  SRT_RETURN_IF_ERROR(copy_input0(ctx));
  if (!ctx.has_output(1)) return ok_status();
  const ops::TensorRef& mask = ctx.output(1);
  if (mask.numel() != ctx.input(0).numel())
    return ctx.error("mask has shape " + dims_to_string(mask.dims) + " but input 0 has shape " +
                     dims_to_string(ctx.input(0).dims));
  const int64_t n = mask.numel();
  if (n == 0) return ok_status();
  if (mask.dtype == DataType::kBool) {
    SRT_CUDA(cudaMemsetAsync(mask.data, 1, static_cast<size_t>(n), ctx.stream()));
    return ok_status();
  }
  return cuda_dispatch<ops::kFloats>(mask.dtype, ctx.node().describe(), [&]<typename T>() {
    return launch_same_shape(ctx, "Dropout mask kernel", mask.as<T>(), n, OneFn<T>{});
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Identity, "Identity", identity_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(Dropout, "Dropout", dropout_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
