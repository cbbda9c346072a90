// Transpose: permutes dims ('perm', default reversed). A strided copy of the input.
#include "ops/transpose.h"

#include "ops/common.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  const TensorInfo& x = ctx.input(0);
  const DataType dt = ctx.input_dtype(0);
  if (!x.has_shape) {
    // The perm attribute still fixes the rank.
    if (!ctx.node().has_attr("perm")) {
      ctx.set_output_unranked(0, dt);
      return ok_status();
    }
    SRT_ASSIGN_OR_RETURN(auto perm, ctx.node().attr_ints("perm"));
    SRT_RETURN_IF_ERROR(resolve_perm(ctx.node(), perm.size()).status());
    ctx.set_output(0, dt, Dims(perm.size(), kDynamicDim));
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(auto perm, resolve_perm(ctx.node(), x.dims.size()));
  Dims out;
  for (int64_t p : perm) out.push_back(x.dims[static_cast<size_t>(p)]);
  ctx.set_output(0, dt, std::move(out));
  return ok_status();
}

// Plan load: perm a permutation of the input's axes (the kernel indexes dims by it).
Status verify(const InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.input(0).has_shape) return ok_status();
  return resolve_perm(ctx.node(), ctx.input_dims(0).size()).status();
}

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(StridedView v, transpose_view(ctx));
  const TensorRef& x = ctx.input(0);
  strided_copy(ctx.output(0).data, x.data, dtype_size(x.dtype), v.dims, v.strides, 0);
  return ok_status();
}

}  // namespace

Result<std::vector<int64_t>> resolve_perm(const ir::Node& node, size_t rank) {
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

Result<StridedView> transpose_view(const KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(auto perm, resolve_perm(ctx.node(), x.dims.size()));
  const auto in_strides = dense_strides(x.dims);
  StridedView v;
  for (int64_t p : perm) {
    v.strides.push_back(in_strides[static_cast<size_t>(p)]);
    v.dims.push_back(x.dims[static_cast<size_t>(p)]);
  }
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, v.dims));
  return v;
}

STREAMRT_REGISTER_OP(Transpose, {.op_type = "Transpose", .infer = infer, .cpu = cpu, .verify = verify,
                                 .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
