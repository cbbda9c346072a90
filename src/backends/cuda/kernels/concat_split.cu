// Concat and Split on CUDA: each input (Concat) or output (Split) is one pitched 2-D copy of
// `outer` rows, a row being its stretch of the axis times the inner block. Validation, the
// zero-size-input rule and the Split size rules are src/ops/concat.cc's ops::concat_layout and
// src/ops/split.cc's ops::split_sizes.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/concat.h"
#include "ops/data_movement.h"
#include "ops/split.h"

namespace streamrt::cuda {
namespace {

Status concat_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ops::ConcatLayout l, ops::concat_layout(ctx));
  const ops::TensorRef& y = ctx.output(0);
  const size_t rank = l.rank, ax = l.axis;
  const int64_t outer = l.outer, inner = l.inner;
  const auto esize = static_cast<int64_t>(dtype_size(y.dtype));
  const int64_t out_pitch = y.dims[ax] * inner * esize;
  int64_t dst_offset = 0;  // bytes into each output row
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ops::TensorRef& x = ctx.input(i);
    if (x.dims.size() != rank) continue;
    const int64_t row = x.dims[ax] * inner * esize;
    if (row == 0) continue;
    SRT_RETURN_IF_ERROR(pitched_copy_cuda(static_cast<char*>(y.data) + dst_offset, out_pitch, x.data, row, outer, row,
                                          ctx.stream()));
    dst_offset += row;
  }
  return ok_status();
}

Status split_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("input 0 is not bound");
  if (ctx.num_outputs() == 0) return ctx.error("has no outputs");
  const ops::TensorRef& x = ctx.input(0);
  const size_t rank = x.dims.size();
  if (rank == 0) return ctx.error("cannot split a scalar");
  SRT_ASSIGN_OR_RETURN(int64_t axis, ctx.node().attr_int("axis", 0));
  SRT_ASSIGN_OR_RETURN(int64_t a, ops::normalize_axis(ctx.node(), axis, static_cast<int64_t>(rank)));
  const size_t ax = static_cast<size_t>(a);
  const auto esize = static_cast<int64_t>(dtype_size(x.dtype));
  const int64_t outer = ops::dims_product(x.dims, 0, ax);
  const int64_t inner = ops::dims_product(x.dims, ax + 1, rank);
  const int64_t dim = x.dims[ax];
  // Sizes from the 'split' input (opset 13+, host copy) or attribute (older), else equal parts
  // (the last one smaller with opset 18's num_outputs). Computed rather than read off the
  // output dims so that an unbound output still advances the offset correctly.
  ops::SplitSpec spec;
  SRT_ASSIGN_OR_RETURN(spec.values, host_int_list(ctx, 1, "split"));
  spec.given = spec.values.has_value();
  spec.uneven_ok = ctx.node().has_attr("num_outputs");
  SRT_ASSIGN_OR_RETURN(auto sizes, ops::split_sizes(ctx.node(), spec, dim, ctx.num_outputs()));
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const ops::TensorRef& y = ctx.output(i);
    const int64_t size = sizes[i];
    if (y.present()) {
      Dims expect = x.dims;
      expect[ax] = size;
      SRT_RETURN_IF_ERROR(ops::check_output(ctx, i, x.dtype, expect));
      const int64_t row = size * inner * esize;
      SRT_RETURN_IF_ERROR(pitched_copy_cuda(y.data, row, static_cast<const char*>(x.data) + offset * inner * esize,
                                            dim * inner * esize, outer, row, ctx.stream()));
    }
    offset += size;
  }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Concat, "Concat", concat_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(Split, "Split", split_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
