// GatherND (opsets 11, 12: batch_dims, 13): each row of indices' last axis (length k, int64;
// int32 is accepted too) picks the slice data[batch..., i0, .., ik-1, :], batch being the first
// batch_dims axes that data and indices share. Output dims: indices.dims[:-1] +
// data.dims[batch_dims + k:]. Negative indices count from the end; an out-of-range one is an
// error. Any data type, moved as bytes.
#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/indexing.h"

namespace streamrt::ops {
namespace {

constexpr int kBatchDimsSince = 12;

Result<int64_t> batch_dims_of(const ir::Node& node) {
  if (node.opset < kBatchDimsSince && node.has_attr("batch_dims"))
    return node.error(StatusCode::kInvalidModel, "attribute 'batch_dims' needs opset 12");
  return node.attr_int("batch_dims", 0);
}

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("needs data and indices");
  if (!is_index_type(ctx.input_dtype(1)))
    return ctx.error(std::string("indices must be int64 (or int32), got ") + dtype_name(ctx.input_dtype(1)));
  SRT_ASSIGN_OR_RETURN(int64_t b, batch_dims_of(ctx.node()));
  const DataType dt = ctx.input_dtype(0);
  const TensorInfo& data = ctx.input(0);
  const TensorInfo& idx = ctx.input(1);
  if (!data.has_shape || !idx.has_shape) {
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(int64_t k, check_nd_dims(ctx.node(), StatusCode::kInvalidModel, data.dims, idx.dims, b));
  if (k < 0) {
    // The output rank depends on the last dim of indices.
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  Dims out = nd_result_dims(data.dims, idx.dims, k, b);
  // A batch dim known on one side only is known for the output.
  for (size_t d = 0; d < static_cast<size_t>(b); ++d) out[d] = merge_dim(data.dims[d], idx.dims[d]).value_or(out[d]);
  ctx.set_output(0, dt, std::move(out));
  return ok_status();
}

// Plan load: batch_dims below both ranks (the kernel strides over it).
Status verify(const InferContext& ctx) {
  SRT_RETURN_IF_ERROR(verify_attr_range(ctx.node(), "batch_dims", 0, kMaxAttrExtent));
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.input(0).has_shape || !ctx.input(1).has_shape)
    return ok_status();
  SRT_ASSIGN_OR_RETURN(int64_t b, batch_dims_of(ctx.node()));
  return check_nd_dims(ctx.node(), StatusCode::kInvalidModel, ctx.input_dims(0), ctx.input_dims(1), b).status();
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  const TensorRef& data = ctx.input(0);
  const TensorRef& indices = ctx.input(1);
  SRT_ASSIGN_OR_RETURN(int64_t b, batch_dims_of(ctx.node()));
  SRT_ASSIGN_OR_RETURN(NdSlices s, nd_slice_offsets(ctx, data.dims, indices, b));
  const int64_t k = indices.dims.back();
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, data.dtype, nd_result_dims(data.dims, indices.dims, k, b)));
  const size_t es = dtype_size(data.dtype);
  const size_t bytes = static_cast<size_t>(s.slice) * es;
  const char* src = static_cast<const char*>(data.data);
  char* dst = static_cast<char*>(ctx.output(0).data);
  if (bytes == 0) return ok_status();
  for (size_t t = 0; t < s.offsets.size(); ++t)
    std::memcpy(dst + t * bytes, src + static_cast<size_t>(s.offsets[t]) * es, bytes);
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(GatherND, {.op_type = "GatherND", .min_opset = 11, .infer = infer, .cpu = cpu, .verify = verify,
                                .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
