// GlobalAveragePool, GlobalMaxPool: reduce every spatial axis of X [N, C, D1..Dn] to 1.
#include <limits>

#include "ops/common.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  if (!ctx.input(0).has_shape) {
    ctx.set_output_unranked(0, ctx.input_dtype(0));
    return ok_status();
  }
  Dims y = ctx.input_dims(0);
  if (y.size() < 2) return ctx.error("X has shape " + dims_to_string(y) + ", expected rank >= 2");
  for (size_t i = 2; i < y.size(); ++i) y[i] = 1;
  ctx.set_output(0, ctx.input_dtype(0), y);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  if (x.dims.size() < 2) return ctx.error("X has shape " + dims_to_string(x.dims) + ", expected rank >= 2");
  const int64_t planes = x.dims[0] * x.dims[1];
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  if (ctx.output(0).numel() != planes) return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims));
  const bool max = ctx.node().op_type == "GlobalMaxPool";
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* px = x.as<T>();
    T* py = ctx.output(0).as<T>();
    for (int64_t p = 0; p < planes; ++p) {
      const T* xp = px + p * size;
      float acc = max ? -std::numeric_limits<float>::infinity() : 0.f;
      for (int64_t i = 0; i < size; ++i) {
        float v = load(xp[i]);
        if (max) acc = v > acc ? v : acc;
        else acc += v;
      }
      // An empty spatial extent averages to 0 rather than 0/0.
      py[p] = store<T>(max || size == 0 ? acc : acc / static_cast<float>(size));
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(GlobalAveragePool, {.op_type = "GlobalAveragePool", .infer = infer, .cpu = cpu,
                                         .cpu_dtypes = dtypes(kFloats)});
STREAMRT_REGISTER_OP(GlobalMaxPool, {.op_type = "GlobalMaxPool", .infer = infer, .cpu = cpu,
                                     .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
