// Logical ops on bool tensors: Not (same shape), And, Or, Xor (numpy broadcast).
// Inputs are read as bytes (any non-zero byte is true); outputs are 0 / 1.
#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

Status not_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kBools));
  ctx.set_output_like(0, DataType::kBool, 0);
  return ok_status();
}

Status not_cpu(KernelContext& ctx) {
  if (ctx.input(0).dtype != DataType::kBool) return ctx.error("input must be bool");
  SRT_RETURN_IF_ERROR(check_same_numel(ctx, 0, 0));
  const uint8_t* px = bool_bytes(ctx.input(0));
  bool* py = ctx.output(0).as<bool>();
  for (int64_t i = 0, n = ctx.input(0).numel(); i < n; ++i) py[i] = px[i] == 0;
  return ok_status();
}

struct And { static bool f(bool a, bool b) { return a && b; } };
struct Or { static bool f(bool a, bool b) { return a || b; } };
struct Xor { static bool f(bool a, bool b) { return a != b; } };

Status binary_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kBools));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kBools));
  return infer_broadcast_output(ctx, 0, 2, DataType::kBool);
}

template <typename Op>
Status binary_cpu(KernelContext& ctx) {
  const TensorRef& a = ctx.input(0);
  const TensorRef& b = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  if (a.dtype != DataType::kBool || b.dtype != DataType::kBool) return ctx.error("inputs must be bool");
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, a.dims, y.dims, "input 0"));
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, b.dims, y.dims, "input 1"));
  const uint8_t* pa = bool_bytes(a);
  const uint8_t* pb = bool_bytes(b);
  bool* py = y.as<bool>();
  for_each_broadcast<2>(y.dims, {a.dims, b.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    py[i] = Op::f(pa[o[0]] != 0, pb[o[1]] != 0);
  });
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Not, {.op_type = "Not", .infer = not_infer, .cpu = not_cpu,
                           .cpu_dtypes = dtype_bit(DataType::kBool)});
STREAMRT_REGISTER_OP(And, {.op_type = "And", .min_opset = 7, .infer = binary_infer,
                           .cpu = binary_cpu<And>, .cpu_dtypes = dtype_bit(DataType::kBool)});
STREAMRT_REGISTER_OP(Or, {.op_type = "Or", .min_opset = 7, .infer = binary_infer,
                          .cpu = binary_cpu<Or>, .cpu_dtypes = dtype_bit(DataType::kBool)});
STREAMRT_REGISTER_OP(Xor, {.op_type = "Xor", .min_opset = 7, .infer = binary_infer,
                           .cpu = binary_cpu<Xor>, .cpu_dtypes = dtype_bit(DataType::kBool)});

}  // namespace streamrt::ops
