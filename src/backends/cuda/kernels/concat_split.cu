// Concat and Split on CUDA: each input (Concat) or output (Split) is one pitched 2-D copy of
// `outer` rows, a row being its stretch of the axis times the inner block. Validation, the
// zero-size-input rule and the Split size rules mirror src/ops/concat.cc and src/ops/split.cc.
#include <algorithm>

#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

Result<int64_t> concat_axis(const ir::Node& node) {
  // Concat-1 defaulted axis to 1; from opset 4 it is required.
  if (node.opset < 4) return node.attr_int("axis", 1);
  return node.attr_int("axis");
}

Status concat_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 0));
  const ops::TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(int64_t axis, concat_axis(ctx.node()));
  const size_t rank = y.dims.size();
  if (rank == 0) return ctx.error("cannot concatenate scalars");
  SRT_ASSIGN_OR_RETURN(int64_t a, ops::normalize_axis(ctx.node(), axis, static_cast<int64_t>(rank)));
  const size_t ax = static_cast<size_t>(a);
  const auto esize = static_cast<int64_t>(dtype_size(y.dtype));
  const int64_t outer = ops::dims_product(y.dims, 0, ax);
  const int64_t inner = ops::dims_product(y.dims, ax + 1, rank);
  // Validate first: the output must be exactly the inputs laid side by side. An empty input of
  // another rank is skipped (as concat.cc and onnxruntime do).
  int64_t total = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ops::TensorRef& x = ctx.input(i);
    if (x.dims.size() != rank && x.numel() == 0) continue;
    bool ok = x.dims.size() == rank && x.dtype == y.dtype;
    for (size_t d = 0; ok && d < rank; ++d) ok = d == ax || x.dims[d] == y.dims[d];
    if (!ok) return ctx.error("input " + std::to_string(i) + " " + dims_to_string(x.dims) +
                              " does not fit output " + dims_to_string(y.dims));
    total += x.dims[ax];
  }
  if (total != y.dims[ax]) return ctx.error("inputs do not add up to the output along the axis");
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

// Sizes of the `n` outputs along an axis of static length `dim` (as split.cc's split_sizes).
Result<std::vector<int64_t>> split_sizes(const ir::Node& node, const std::optional<std::vector<int64_t>>& given,
                                         bool uneven_ok, int64_t dim, size_t n) {
  auto fail = [&](const std::string& msg) { return node.error(StatusCode::kInvalidModel, msg); };
  if (given) {
    const auto& v = *given;
    if (v.size() != n)
      return fail("split has " + std::to_string(v.size()) + " sizes for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : v) {
      if (s < 0) return fail("split size " + std::to_string(s) + " is negative");
      if (__builtin_add_overflow(sum, s, &sum)) return fail("split sizes overflow");
    }
    if (sum != dim)
      return fail("split sizes add up to " + std::to_string(sum) + ", the axis has " + std::to_string(dim));
    return v;
  }
  const int64_t count = static_cast<int64_t>(n);
  if (!uneven_ok && dim % count != 0)
    return fail("axis of length " + std::to_string(dim) + " does not split into " + std::to_string(n) +
                " equal parts");
  const int64_t chunk = (dim + count - 1) / count;
  std::vector<int64_t> sizes;
  int64_t left = dim;
  for (size_t i = 0; i < n; ++i) {
    sizes.push_back(std::min(chunk, left));
    left -= sizes.back();
  }
  return sizes;
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
  SRT_ASSIGN_OR_RETURN(auto given, host_int_list(ctx, 1, "split"));
  SRT_ASSIGN_OR_RETURN(auto sizes, split_sizes(ctx.node(), given, ctx.node().has_attr("num_outputs"), dim,
                                               ctx.num_outputs()));
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

STREAMRT_REGISTER_CUDA_KERNEL(Concat, "Concat", concat_cuda);
STREAMRT_REGISTER_CUDA_KERNEL(Split, "Split", split_cuda);

}  // namespace streamrt::cuda
