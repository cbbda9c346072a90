// Relu: y = max(x, 0). Relu-1 (consumed_inputs) is refused: min_opset 6.
#include "ops/common.h"
#include "ops/fused_elementwise.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAllFloats | kSignedInts));
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  return dispatch<kAllFloats | kSignedInts>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* px = x.as<T>();
    T* py = y.as<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      auto v = load(px[i]);
      py[i] = store<T>(v > 0 ? v : decltype(v)(0));
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Relu, {.op_type = "Relu", .min_opset = 6, .infer = infer, .cpu = cpu,
                            .cpu_dtypes = dtypes(kAllFloats | kSignedInts), .fused_opcode = fused::kRelu});

}  // namespace streamrt::ops
