// GatherElements (opsets 11, 13): output[i] = data[i with i[axis] = indices[i]] for every
// multi-index i of `indices` (int32 / int64, same rank as data, dims off the axis no larger than
// data's; negative indices count from the end). The output has indices' shape and data's type;
// any data type, moved as bytes. An out-of-range index is an error, never a read past data.
#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/indexing.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("needs data and indices");
  if (!is_index_type(ctx.input_dtype(1)))
    return ctx.error(std::string("indices must be int32 or int64, got ") + dtype_name(ctx.input_dtype(1)));
  SRT_RETURN_IF_ERROR(infer_element_dims(ctx));
  ctx.set_output_like(0, ctx.input_dtype(0), 1);
  return ok_status();
}

// Plan load: axis within data's rank (the kernel strides over it).
Status verify(const InferContext& ctx) { return verify_axis_attr(ctx, "axis", 0); }

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  const TensorRef& data = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(int64_t a, element_axis(ctx.node(), data.dims.size()));
  SRT_ASSIGN_OR_RETURN(auto offsets, element_offsets(ctx, data.dims, ctx.input(1), a));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, data.dtype, ctx.input(1).dims));
  const size_t es = dtype_size(data.dtype);
  const char* src = static_cast<const char*>(data.data);
  char* dst = static_cast<char*>(y.data);
  for (size_t k = 0; k < offsets.size(); ++k) std::memcpy(dst + k * es, src + static_cast<size_t>(offsets[k]) * es, es);
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(GatherElements,
                     {.op_type = "GatherElements", .min_opset = 11, .infer = infer, .cpu = cpu, .verify = verify,
                                                           .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
