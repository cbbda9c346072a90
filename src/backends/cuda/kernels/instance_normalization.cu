// InstanceNormalization (opset 6) on CUDA, mirroring src/ops/instance_normalization.cc: a row per
// (n, c) of the spatial elements, scale / B per channel (kernels/norm_rows.cuh).
#include "backends/cuda/kernels/norm_rows.cuh"

namespace streamrt::cuda {
namespace {

Status instance_norm_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  if (x.dims.size() < 3 || !ctx.has_input(1) || !ctx.has_input(2))
    return ctx.error("expects X of rank >= 3, scale and B");
  const int64_t c = x.dims[1];
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input(i).dims != Dims{c} || ctx.input(i).dtype != x.dtype)
      return ctx.error("input " + std::to_string(i) + " has shape " + dims_to_string(ctx.input(i).dims) +
                       ", expected [" + std::to_string(c) + "] of X's type");
  if (ctx.output(0).dims != x.dims) return ctx.error("output does not have X's shape");
  if (x.numel() == 0) return ok_status();
  const int64_t spatial = x.numel() / (x.dims[0] * c);
  norm::RowNormArgs a = norm::contiguous_rows(x.dims[0] * c, spatial);
  SRT_ASSIGN_OR_RETURN(a.epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  a.param_div = spatial;
  a.param_size = c;
  return norm::launch_norm_rows(ctx, a, 1, 2);
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(InstanceNormalization, "InstanceNormalization", instance_norm_cuda,
                              cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
