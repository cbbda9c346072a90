// Mod (opset 10; 13 adds bfloat16): element-wise remainder with numpy broadcasting, like Add.
// Attribute fmod (default 0) picks the sign rule (ops/mod.h). The spec asks for fmod = 1 on
// float inputs; with fmod = 0 a float input gets numpy's mod (sign of the divisor), as the ONNX
// reference implementation computes, rather than an error.
#include "ops/elementwise_util.h"
#include "ops/data_movement.h"
#include "ops/mod.h"

namespace streamrt::ops {
namespace {

Result<bool> c_fmod(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t f, node.attr_int("fmod", 0));
  if (f != 0 && f != 1)
    return node.error(StatusCode::kInvalidModel, "attribute 'fmod' is " + std::to_string(f) + ", expected 0 or 1");
  return f == 1;
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(c_fmod(ctx.node()).status());
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kNumeric));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kNumeric));
  SRT_RETURN_IF_ERROR(require_same_dtype(ctx, 0, 1));
  return infer_broadcast_output(ctx, 0, 2, ctx.input_dtype(0));
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  SRT_ASSIGN_OR_RETURN(bool fmod, c_fmod(ctx.node()));
  const TensorRef& a = ctx.input(0);
  const TensorRef& b = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  if (a.dtype != b.dtype || y.dtype != a.dtype) return ctx.error("inputs and output must have one data type");
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, a.dims, y.dims, "input A"));
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, b.dims, y.dims, "input B"));
  return dispatch<kNumeric>(a.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* pa = a.as<T>();
    const T* pb = b.as<T>();
    T* py = y.as<T>();
    for_each_broadcast<2>(y.dims, {a.dims, b.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      py[i] = store<T>(mod_value<compute_t<T>>(load(pa[o[0]]), load(pb[o[1]]), fmod));
    });
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Mod, {.op_type = "Mod", .min_opset = 10, .infer = infer, .cpu = cpu,
                           .cpu_dtypes = dtypes(kNumeric)});

}  // namespace streamrt::ops
