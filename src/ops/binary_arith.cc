// Add, Sub, Mul, Div, Pow: numpy-broadcast binary arithmetic. Opset 7 replaced the legacy
// 'broadcast' / 'axis' attributes with numpy broadcasting; older opsets are refused.
#include <cmath>

#include "ops/elementwise_util.h"
#include "ops/fused_elementwise.h"

namespace streamrt::ops {
namespace {

enum class Arith { kAdd, kSub, kMul, kDiv, kPow };

Arith arith_of(const std::string& op) {
  if (op == "Add") return Arith::kAdd;
  if (op == "Sub") return Arith::kSub;
  if (op == "Mul") return Arith::kMul;
  if (op == "Div") return Arith::kDiv;
  return Arith::kPow;
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kNumeric));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kNumeric));
  // Pow may mix base and exponent types; the others require equal types.
  if (ctx.node().op_type != "Pow" && ctx.input_dtype(0) != ctx.input_dtype(1))
    return ctx.error(std::string("input types differ: ") + dtype_name(ctx.input_dtype(0)) +
                     " vs " + dtype_name(ctx.input_dtype(1)));
  if (!ctx.input(0).has_shape || !ctx.input(1).has_shape) {
    ctx.set_output_unranked(0, ctx.input_dtype(0));
    return ok_status();
  }
  auto dims = broadcast_dims(ctx.input_dims(0), ctx.input_dims(1));
  if (!dims.ok()) return ctx.error(dims.status().message());
  ctx.set_output(0, ctx.input_dtype(0), *dims);
  return ok_status();
}

// Integer add / sub / mul wrap modulo 2^bits like numpy. They are done in the unsigned type
// of the promoted operands: int16 * int16 is int arithmetic in C++ and could overflow (UB).
template <typename C, typename Fn>
C wrapping(C a, C b, Fn&& fn) {
  using U = std::make_unsigned_t<decltype(a + b)>;
  return static_cast<C>(fn(static_cast<U>(a), static_cast<U>(b)));
}

template <typename C>
C apply(Arith op, C a, C b) {
  constexpr bool kInt = std::is_integral_v<C>;
  switch (op) {
    case Arith::kAdd:
      if constexpr (kInt) return wrapping(a, b, [](auto x, auto y) { return x + y; });
      else return a + b;
    case Arith::kSub:
      if constexpr (kInt) return wrapping(a, b, [](auto x, auto y) { return x - y; });
      else return a - b;
    case Arith::kMul:
      if constexpr (kInt) return wrapping(a, b, [](auto x, auto y) { return x * y; });
      else return a * b;
    case Arith::kDiv:
      if constexpr (kInt) {
        if (b == 0) return C(0);
        if constexpr (std::is_signed_v<C>)
          if (b == -1) return wrapping_neg(a);  // INT_MIN / -1 would overflow
        return static_cast<C>(a / b);
      } else {
        return a / b;
      }
    case Arith::kPow:
      if constexpr (kInt) return saturate_cast<C>(std::pow(double(a), double(b)));
      else return std::pow(a, b);
  }
  return a;
}

template <typename T>
Status run_typed(KernelContext& ctx, Arith op) {
  const TensorRef& a = ctx.input(0);
  const TensorRef& b = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  const T* pa = a.as<T>();
  T* py = y.as<T>();
  if (b.dtype == a.dtype) {
    const T* pb = b.as<T>();
    for_each_broadcast<2>(y.dims, {a.dims, b.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      py[i] = store<T>(apply<compute_t<T>>(op, load(pa[o[0]]), load(pb[o[1]])));
    });
    return ok_status();
  }
  // Pow with a different exponent type: compute in double.
  std::vector<double> exps;
  auto bvals = Tensor::view(b.dtype, b.dims, b.data, nullptr).to_double_vector();
  if (!bvals.ok()) return bvals.status();
  exps = std::move(bvals).value();
  for_each_broadcast<2>(y.dims, {a.dims, b.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    double r = std::pow(static_cast<double>(load(pa[o[0]])), exps[o[1]]);
    if constexpr (std::is_integral_v<T>) py[i] = saturate_cast<T>(r);
    else py[i] = store<T>(static_cast<compute_t<T>>(r));
  });
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  Arith op = arith_of(ctx.node().op_type);
  return dispatch<kNumeric>(ctx.input(0).dtype, ctx.node().describe(),
                  [&]<typename T>() { return run_typed<T>(ctx, op); });
}

}  // namespace

STREAMRT_REGISTER_OP(Add, {.op_type = "Add", .min_opset = 7, .infer = infer, .cpu = cpu,
                           .cpu_dtypes = dtypes(kNumeric), .fused_opcode = fused::kAdd});
STREAMRT_REGISTER_OP(Sub, {.op_type = "Sub", .min_opset = 7, .infer = infer, .cpu = cpu,
                           .cpu_dtypes = dtypes(kNumeric), .fused_opcode = fused::kSub});
STREAMRT_REGISTER_OP(Mul, {.op_type = "Mul", .min_opset = 7, .infer = infer, .cpu = cpu,
                           .cpu_dtypes = dtypes(kNumeric), .fused_opcode = fused::kMul});
STREAMRT_REGISTER_OP(Div, {.op_type = "Div", .min_opset = 7, .infer = infer, .cpu = cpu,
                           .cpu_dtypes = dtypes(kNumeric), .fused_opcode = fused::kDiv});
STREAMRT_REGISTER_OP(Pow, {.op_type = "Pow", .min_opset = 7, .infer = infer, .cpu = cpu,
                           .cpu_dtypes = dtypes(kNumeric), .fused_opcode = fused::kPow});

}  // namespace streamrt::ops
