// Tile on CUDA. Output index q * in_d + r along dim d reads input index r, so the output is the
// input seen as 2r dims (repeats[0], in[0], repeats[1], in[1], ...) with stride 0 on each repeat
// dim: one device strided copy (which drops unit dims and merges untiled neighbours). The
// repeats come from the host copy of input 1 (a shape input of Tile), as src/ops/tile.cc reads.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"
#include "ops/tile.h"

namespace streamrt::cuda {
namespace {

Status tile_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 2));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(auto repeats_opt, host_int_list(ctx, 1, "repeats"));
  const std::vector<int64_t> repeats = std::move(repeats_opt).value_or(std::vector<int64_t>{});
  const size_t rank = x.dims.size();
  SRT_RETURN_IF_ERROR(ops::check_repeats(ctx.node(), repeats, rank));
  Dims out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] == 0) out[d] = 0;
    else if (__builtin_mul_overflow(x.dims[d], repeats[d], &out[d]))
      return ctx.error("tiling " + std::to_string(x.dims[d]) + " by " + std::to_string(repeats[d]) + " overflows");
  }
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, out));
  if (y.numel() == 0) return ok_status();
  const auto in_strides = ops::dense_strides(x.dims);
  Dims view;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < rank; ++d) {
    view.push_back(repeats[d]);
    strides.push_back(0);
    view.push_back(x.dims[d]);
    strides.push_back(in_strides[d]);
  }
  return strided_copy_cuda(y.data, x.data, dtype_size(x.dtype), view, strides, 0, ctx.stream(), ctx.node().describe());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Tile, "Tile", tile_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
