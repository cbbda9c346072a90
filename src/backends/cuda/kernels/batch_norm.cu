// BatchNormalization (inference) on CUDA, as src/ops/batch_norm.cc: the parameters fold into
// y = x * a + c per slot (a channel, or with opset 7/8 spatial=0 an element of X.dims[1:]);
// a first kernel folds them into float arrays in the workspace, a second applies them.
#include <cmath>

#include "backends/cuda/kernels/cuda_types.cuh"

namespace streamrt::cuda {
namespace {

// Parameters may have a float type other than X's (ONNX's T1 / T2): read them by tag.
enum ParamType : int { kParamF32 = 0, kParamF16 = 1, kParamBF16 = 2 };

__device__ __forceinline__ float load_param(const void* p, int type, int64_t i) {
  if (type == kParamF16) return __half2float(static_cast<const __half*>(p)[i]);
  if (type == kParamBF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

struct BnParams {
  const void* ptr[4];  // scale, B, mean, var
  int type[4];
};

__global__ void bn_fold_kernel(BnParams p, float eps, float* a, float* c, int64_t slots) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < slots; k += int64_t(gridDim.x) * blockDim.x) {
    const float scale = load_param(p.ptr[0], p.type[0], k), bias = load_param(p.ptr[1], p.type[1], k);
    const float mean = load_param(p.ptr[2], p.type[2], k), var = load_param(p.ptr[3], p.type[3], k);
    const float ak = scale / sqrtf(var + eps);
    a[k] = ak;
    c[k] = bias - mean * ak;
  }
}

// Slot of element i: its channel ((i / inner) % channels), or with per-element parameters its
// offset within one image (i % (channels * inner)).
template <typename T>
__global__ void bn_apply_kernel(const T* x, T* y, const float* a, const float* c, int64_t total, int64_t channels,
                                int64_t inner, bool per_channel) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = per_channel ? (i / inner) % channels : i % (channels * inner);
    y[i] = from_acc<T>(to_acc(x[i]) * a[k] + c[k]);
  }
}

Status check_mode(const CudaKernelContext& ctx) {
  const ir::Node& node = ctx.node();
  SRT_ASSIGN_OR_RETURN(int64_t training, node.attr_int("training_mode", 0));
  if (training != 0) return ctx.unsupported("training_mode=1 is not supported (inference only)");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != ir::kNoValue)
      return ctx.unsupported("output " + std::to_string(i) + " (training statistics) is not supported");
  return ok_status();
}

Result<int> param_type(const CudaKernelContext& ctx, size_t i) {
  switch (ctx.input(i).dtype) {
    case DataType::kFloat32: return int{kParamF32};
    case DataType::kFloat16: return int{kParamF16};
    case DataType::kBFloat16: return int{kParamBF16};
    default: return ctx.unsupported("input " + std::to_string(i) + " has type " + dtype_name(ctx.input(i).dtype));
  }
}

Status batch_norm_cuda(CudaKernelContext& ctx) {
  const ir::Node& node = ctx.node();
  SRT_RETURN_IF_ERROR(check_mode(ctx));
  const ops::TensorRef& x = ctx.input(0);
  if (x.dims.size() < 2) return ctx.error("X has shape " + dims_to_string(x.dims) + ", expected rank >= 2");
  if (ctx.output(0).dims != x.dims)
    return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims) + ", expected " + dims_to_string(x.dims));
  for (size_t i = 1; i < 5; ++i)
    if (!ctx.has_input(i)) return ctx.error("missing input " + std::to_string(i));
  // Parameter size: C, or prod(X.dims[1:]) for opsets 7/8 with spatial=0.
  SRT_ASSIGN_OR_RETURN(int64_t spatial, node.attr_int("spatial", 1));
  const int64_t want = spatial != 0 || node.opset >= 9 ? x.dims[1] : dims_numel(Dims(x.dims.begin() + 1, x.dims.end()));
  BnParams p;
  for (size_t i = 0; i < 4; ++i) {
    const ops::TensorRef& t = ctx.input(i + 1);
    if (t.numel() != want || (t.dims.size() != 1 && t.dims.size() + 1 != x.dims.size()))
      return ctx.error("parameter input " + std::to_string(i + 1) + " has shape " + dims_to_string(t.dims) +
                       ", expected " + std::to_string(want) + " values for X " + dims_to_string(x.dims));
    p.ptr[i] = t.data;
    SRT_ASSIGN_OR_RETURN(p.type[i], param_type(ctx, i + 1));
  }
  SRT_ASSIGN_OR_RETURN(float eps, node.attr_float("epsilon", 1e-5f));
  const int64_t total = x.numel();
  if (total == 0) return ok_status();
  const int64_t channels = x.dims[1];
  const int64_t inner = total / x.dims[0] / channels;
  const int64_t slots = want;
  SRT_RETURN_IF_ERROR(ctx.resources().ensure_workspace(static_cast<size_t>(2 * slots) * sizeof(float)));
  float* a = static_cast<float*>(ctx.resources().workspace);
  float* c = a + slots;
  bn_fold_kernel<<<grid_for(slots), 256, 0, ctx.stream()>>>(p, eps, a, c, slots);
  SRT_CUDA_LAUNCH("bn_fold_kernel");
  const bool per_channel = slots == channels;
  return cuda_dispatch<ops::kFloats>(x.dtype, node.describe(), [&]<typename T>() -> Status {
    bn_apply_kernel<T><<<grid_for(total), 256, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<T>(), a, c,
                                                                    total, channels, inner, per_channel);
    SRT_CUDA_LAUNCH("bn_apply_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(BatchNormalization, "BatchNormalization", batch_norm_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
