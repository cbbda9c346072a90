// Transpose on CUDA: a strided copy of the input (src/ops/transpose.cc's view), which merges
// dims that stay contiguous and takes a tiled shared-memory path when the last two (merged)
// dims are swapped.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

// The permutation for `rank`: the attribute (checked to be a permutation) or the reverse.
Result<std::vector<int64_t>> read_perm(const ir::Node& node, size_t rank) {
  std::vector<int64_t> perm;
  if (!node.has_attr("perm")) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    return perm;
  }
  SRT_ASSIGN_OR_RETURN(perm, node.attr_ints("perm"));
  if (perm.size() != rank)
    return node.error(StatusCode::kInvalidModel, "perm has " + std::to_string(perm.size()) +
                                                     " entries for a rank-" + std::to_string(rank) + " input");
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)])
      return node.error(StatusCode::kInvalidModel, "perm is not a permutation of 0.." +
                                                       std::to_string(static_cast<int64_t>(rank) - 1));
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

Status transpose_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(auto perm, read_perm(ctx.node(), x.dims.size()));
  const auto in_strides = ops::dense_strides(x.dims);
  std::vector<int64_t> strides;
  Dims out;
  for (int64_t p : perm) {
    strides.push_back(in_strides[static_cast<size_t>(p)]);
    out.push_back(x.dims[static_cast<size_t>(p)]);
  }
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, out));
  return strided_copy_cuda(y.data, x.data, dtype_size(x.dtype), out, strides, 0, ctx.stream(),
                           ctx.node().describe());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Transpose, "Transpose", transpose_cuda);

}  // namespace streamrt::cuda
