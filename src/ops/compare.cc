// Comparisons with numpy broadcast and a bool output: Equal (numeric and bool), Less, Greater,
// LessOrEqual, GreaterOrEqual (numeric). Half types compare in float; NaN compares false
// (so Equal(NaN, NaN) is false).
#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

struct Equal {
  static constexpr unsigned kTypes = kAll;
  template <typename C> static bool f(C a, C b) { return a == b; }
};
struct Less {
  static constexpr unsigned kTypes = kNumeric;
  template <typename C> static bool f(C a, C b) { return a < b; }
};
struct Greater {
  static constexpr unsigned kTypes = kNumeric;
  template <typename C> static bool f(C a, C b) { return a > b; }
};
struct LessOrEqual {
  static constexpr unsigned kTypes = kNumeric;
  template <typename C> static bool f(C a, C b) { return a <= b; }
};
struct GreaterOrEqual {
  static constexpr unsigned kTypes = kNumeric;
  template <typename C> static bool f(C a, C b) { return a >= b; }
};

template <typename Op>
Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, Op::kTypes));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, Op::kTypes));
  SRT_RETURN_IF_ERROR(require_same_dtype(ctx, 0, 1));
  return infer_broadcast_output(ctx, 0, 2, DataType::kBool);
}

template <typename Op>
Status cpu(KernelContext& ctx) {
  const TensorRef& a = ctx.input(0);
  const TensorRef& b = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  if (a.dtype != b.dtype) return ctx.error("input data types differ");
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, a.dims, y.dims, "input 0"));
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, b.dims, y.dims, "input 1"));
  bool* py = y.as<bool>();
  if (a.dtype == DataType::kBool && (Op::kTypes & kBools) != 0) {  // Equal: compare truth values
    const uint8_t* pa = bool_bytes(a);
    const uint8_t* pb = bool_bytes(b);
    for_each_broadcast<2>(y.dims, {a.dims, b.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      py[i] = Op::f(pa[o[0]] != 0, pb[o[1]] != 0);
    });
    return ok_status();
  }
  return dispatch<Op::kTypes & kNumeric>(a.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* pa = a.as<T>();
    const T* pb = b.as<T>();
    for_each_broadcast<2>(y.dims, {a.dims, b.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      py[i] = Op::f(load(pa[o[0]]), load(pb[o[1]]));
    });
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Equal, {.op_type = "Equal", .min_opset = 7, .infer = infer<Equal>,
                             .cpu = cpu<Equal>, .cpu_dtypes = dtypes(Equal::kTypes)});
STREAMRT_REGISTER_OP(Less, {.op_type = "Less", .min_opset = 7, .infer = infer<Less>,
                            .cpu = cpu<Less>, .cpu_dtypes = dtypes(Less::kTypes)});
STREAMRT_REGISTER_OP(Greater, {.op_type = "Greater", .min_opset = 7, .infer = infer<Greater>,
                               .cpu = cpu<Greater>, .cpu_dtypes = dtypes(Greater::kTypes)});
STREAMRT_REGISTER_OP(LessOrEqual, {.op_type = "LessOrEqual", .min_opset = 12,
                                   .infer = infer<LessOrEqual>, .cpu = cpu<LessOrEqual>,
                                   .cpu_dtypes = dtypes(LessOrEqual::kTypes)});
STREAMRT_REGISTER_OP(GreaterOrEqual, {.op_type = "GreaterOrEqual", .min_opset = 12,
                                      .infer = infer<GreaterOrEqual>, .cpu = cpu<GreaterOrEqual>,
                                      .cpu_dtypes = dtypes(GreaterOrEqual::kTypes)});

}  // namespace streamrt::ops
