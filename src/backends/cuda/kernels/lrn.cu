// LRN (opsets 1, 13) on CUDA, mirroring src/ops/lrn.cc: one thread per element sums the squares
// of its channel window (in float) and divides by (bias + alpha / size * sum) ^ beta.
#include <algorithm>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

struct LrnArgs {
  int64_t c = 0, inner = 0, total = 0, before = 0, after = 0;
  float alpha_over_size = 0, beta = 0, bias = 0;
};

template <typename T>
__global__ void lrn_kernel(const T* x, T* y, LrnArgs a) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < a.total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = (i / a.inner) % a.c, base = i - ch * a.inner;
    const int64_t lo = ch - a.before < 0 ? 0 : ch - a.before;
    const int64_t hi = ch + a.after > a.c - 1 ? a.c - 1 : ch + a.after;
    float sq = 0.f;
    for (int64_t k = lo; k <= hi; ++k) {
      const float v = to_acc(x[base + k * a.inner]);
      sq += v * v;
    }
    y[i] = from_acc<T>(static_cast<float>(to_acc(x[i])) / powf(a.bias + a.alpha_over_size * sq, a.beta));
  }
}

Status lrn_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  const ir::Node& node = ctx.node();
  SRT_ASSIGN_OR_RETURN(int64_t size, node.attr_int("size"));
  SRT_ASSIGN_OR_RETURN(float alpha, node.attr_float("alpha", 1e-4f));
  SRT_ASSIGN_OR_RETURN(float beta, node.attr_float("beta", 0.75f));
  SRT_ASSIGN_OR_RETURN(float bias, node.attr_float("bias", 1.0f));
  if (size < 1 || size > ops::kMaxAttrExtent) return ctx.error("size " + std::to_string(size) + " is out of range");
  if (x.dims.size() < 3) return ctx.error("X has shape " + dims_to_string(x.dims) + ", expected rank >= 3");
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, x.dims));
  LrnArgs a;
  a.total = x.numel();
  if (a.total == 0) return ok_status();
  a.c = x.dims[1];
  a.inner = ops::dims_product(x.dims, 2, x.dims.size());
  a.before = (size - 1) / 2;
  a.after = size - 1 - a.before;
  a.alpha_over_size = alpha / static_cast<float>(size);
  a.beta = beta;
  a.bias = bias;
  return cuda_dispatch<ops::kFloats>(x.dtype, node.describe(), [&]<typename T>() {
    lrn_kernel<T><<<grid_for(a.total), 256, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<T>(), a);
    SRT_CUDA_LAUNCH("lrn_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(LRN, "LRN", lrn_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
