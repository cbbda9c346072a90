// GroupNormalization (opsets 18, 21) on CUDA, mirroring src/ops/group_normalization.cc: a row per
// (image, group), contiguous; scale / bias per group (18) or per channel (21).
#include "backends/cuda/kernels/norm_rows.cuh"
#include "ops/group_normalization.h"

namespace streamrt::cuda {
namespace {

Status group_norm_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(ops::GroupNormGeometry g, ops::group_norm_geometry(ctx.node(), x.dims));
  for (size_t i = 1; i < 3; ++i)
    if (!ctx.has_input(i) || ctx.input(i).dims != Dims{g.params} || ctx.input(i).dtype != x.dtype)
      return ctx.error("input " + std::to_string(i) + " must be [" + std::to_string(g.params) + "] of X's type");
  if (ctx.output(0).dims != x.dims) return ctx.error("output does not have X's shape");
  if (x.numel() == 0) return ok_status();
  norm::RowNormArgs a = norm::contiguous_rows(g.rows, g.cols);
  a.epsilon = g.epsilon;
  a.param_div = g.param_div;
  a.param_size = g.params;
  return norm::launch_norm_rows(ctx, a, 1, 2);
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(GroupNormalization, "GroupNormalization", group_norm_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
