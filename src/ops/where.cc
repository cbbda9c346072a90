// Where: y = condition ? x : y, numpy broadcast over all three inputs (opset 9; 16 adds
// bfloat16). Values are copied as raw elements, so every dtype works.
#include <cstring>

#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kBools));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kAll));
  SRT_RETURN_IF_ERROR(require_input(ctx, 2, kAll));
  SRT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, 2));
  return infer_broadcast_output(ctx, 0, 3, ctx.input_dtype(1));
}

// Copies with an unsigned integer of the element's width.
template <typename U>
void select(const TensorRef& c, const TensorRef& a, const TensorRef& b, const TensorRef& y) {
  const uint8_t* pc = bool_bytes(c);
  const U* pa = a.as<U>();
  const U* pb = b.as<U>();
  U* py = y.as<U>();
  for_each_broadcast<3>(y.dims, {c.dims, a.dims, b.dims},
                        [&](int64_t i, const std::array<int64_t, 3>& o) {
                          py[i] = pc[o[0]] ? pa[o[1]] : pb[o[2]];
                        });
}

Status cpu(KernelContext& ctx) {
  const TensorRef& c = ctx.input(0);
  const TensorRef& a = ctx.input(1);
  const TensorRef& b = ctx.input(2);
  const TensorRef& y = ctx.output(0);
  if (c.dtype != DataType::kBool || a.dtype != b.dtype || a.dtype != y.dtype)
    return ctx.error("condition must be bool and x, y of the output's data type");
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, c.dims, y.dims, "condition"));
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, a.dims, y.dims, "x"));
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, b.dims, y.dims, "y"));
  switch (dtype_size(a.dtype)) {
    case 1: select<uint8_t>(c, a, b, y); break;
    case 2: select<uint16_t>(c, a, b, y); break;
    case 4: select<uint32_t>(c, a, b, y); break;
    case 8: select<uint64_t>(c, a, b, y); break;
    default: return ctx.unsupported(std::string("data type ") + dtype_name(a.dtype));
  }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Where, {.op_type = "Where", .min_opset = 9, .infer = infer, .cpu = cpu,
                             .cpu_dtypes = kAnyDType, .dtype_input = 1});

}  // namespace streamrt::ops
