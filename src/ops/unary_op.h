// Shape rule and CPU kernel for a same-shape unary op given as a struct with the dtypes it
// accepts (`static constexpr unsigned kTypes`, DTypeSet bits) and its scalar function
// (`static C f(C)` on the compute type: float for the half types). The kernel is a template
// over the struct so the function inlines into the loop. Used by unary_math.cc and
// unary_math_extra.cc.
#pragma once

#include "ops/elementwise_util.h"

namespace streamrt::ops {

template <typename Op>
Status unary_op_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, Op::kTypes));
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

template <typename Op>
Status unary_op_cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_same_numel(ctx, 0, 0));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  return dispatch<Op::kTypes>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* px = x.as<T>();
    T* py = y.as<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = store<T>(Op::f(load(px[i])));
    return ok_status();
  });
}

}  // namespace streamrt::ops
