// Variadic element-wise Max, Min, Sum, Mean over 1..N inputs with numpy broadcast.
// Accumulates in the compute type (float for half types) in an output-sized buffer, one input
// at a time, so the number of inputs is not limited by a template parameter.
// Max / Min take all numeric types (opset 12) and propagate NaN; Sum / Mean take the float
// types, float64 included (accumulated in double).
#include <cmath>

#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

struct Max {
  static constexpr unsigned kTypes = kNumeric;
  template <typename C> static C f(C acc, C v) { return is_nan(acc) || acc > v ? acc : v; }
};
struct Min {
  static constexpr unsigned kTypes = kNumeric;
  template <typename C> static C f(C acc, C v) { return is_nan(acc) || acc < v ? acc : v; }
};
struct Sum {
  static constexpr unsigned kTypes = kAllFloats;
  template <typename C> static C f(C acc, C v) { return acc + v; }
};
struct Mean : Sum {};

template <typename Op>
Status infer(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.error("needs at least one input");
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    SRT_RETURN_IF_ERROR(require_input(ctx, i, Op::kTypes));
    SRT_RETURN_IF_ERROR(require_same_dtype(ctx, 0, i));
  }
  return infer_broadcast_output(ctx, 0, ctx.num_inputs(), ctx.input_dtype(0));
}

template <typename Op>
Status cpu(KernelContext& ctx) {
  const TensorRef& y = ctx.output(0);
  if (ctx.num_inputs() == 0) return ctx.error("needs at least one input");
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    const TensorRef& x = ctx.input(k);
    if (x.dtype != y.dtype) return ctx.error("input " + std::to_string(k) + " has another data type");
    SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, x.dims, y.dims, "input " + std::to_string(k)));
  }
  return dispatch<Op::kTypes>(y.dtype, ctx.node().describe(), [&]<typename T>() {
    using C = compute_t<T>;
    std::vector<C> acc(static_cast<size_t>(y.numel()));
    const TensorRef& x0 = ctx.input(0);
    const T* p0 = x0.as<T>();
    for_each_broadcast<1>(y.dims, {x0.dims}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      acc[i] = load(p0[o[0]]);
    });
    for (size_t k = 1; k < ctx.num_inputs(); ++k) {
      const TensorRef& x = ctx.input(k);
      const T* px = x.as<T>();
      for_each_broadcast<1>(y.dims, {x.dims}, [&](int64_t i, const std::array<int64_t, 1>& o) {
        acc[i] = Op::f(acc[i], load(px[o[0]]));
      });
    }
    const C count = static_cast<C>(ctx.num_inputs());
    T* py = y.as<T>();
    for (size_t i = 0; i < acc.size(); ++i)
      py[i] = store<T>(std::is_same_v<Op, Mean> ? acc[i] / count : acc[i]);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Max, {.op_type = "Max", .min_opset = 8, .infer = infer<Max>, .cpu = cpu<Max>,
                           .cpu_dtypes = dtypes(Max::kTypes)});
STREAMRT_REGISTER_OP(Min, {.op_type = "Min", .min_opset = 8, .infer = infer<Min>, .cpu = cpu<Min>,
                           .cpu_dtypes = dtypes(Min::kTypes)});
STREAMRT_REGISTER_OP(Sum, {.op_type = "Sum", .min_opset = 8, .infer = infer<Sum>, .cpu = cpu<Sum>,
                           .cpu_dtypes = dtypes(Sum::kTypes)});
STREAMRT_REGISTER_OP(Mean, {.op_type = "Mean", .min_opset = 8, .infer = infer<Mean>,
                            .cpu = cpu<Mean>, .cpu_dtypes = dtypes(Mean::kTypes)});

}  // namespace streamrt::ops
