// MeanVarianceNormalization (opsets 9, 13) on CUDA, mirroring src/ops/mean_variance_normalization.cc:
// a row per combination of the kept axes, its columns the reduced axes, both read through
// strided spaces (kernels/norm_rows.cuh); y = (x - mean) / (sqrt(var) + 1e-9).
#include <algorithm>

#include "backends/cuda/kernels/norm_rows.cuh"
#include "ops/data_movement.h"
#include "ops/mean_variance_normalization.h"

namespace streamrt::cuda {
namespace {

Status mvn_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ops::mvn_axes(ctx.node(), x.dims.size()));
  if (ctx.output(0).dims != x.dims) return ctx.error("output does not have X's shape");
  if (x.numel() == 0) return ok_status();
  const std::vector<int64_t> strides = ops::dense_strides(x.dims);
  Dims kept, reduced;
  std::vector<int64_t> kept_st, reduced_st;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    const bool r = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    (r ? reduced : kept).push_back(x.dims[d]);
    (r ? reduced_st : kept_st).push_back(strides[d]);
  }
  norm::RowNormArgs a;
  if (!norm::make_space(kept, kept_st, &a.rows) || !norm::make_space(reduced, reduced_st, &a.cols))
    return ctx.unsupported("X " + dims_to_string(x.dims) + " splits into too many axis groups");
  a.nrows = dims_numel(kept);
  a.ncols = dims_numel(reduced);
  a.epsilon = 1e-9f;
  a.eps_after_sqrt = true;
  return norm::launch_norm_rows(ctx, a, 0, 0);
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(MeanVarianceNormalization, "MeanVarianceNormalization", mvn_cuda,
                              cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
