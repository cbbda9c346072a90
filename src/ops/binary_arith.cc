// Add, Sub, Mul, Div, Pow: numpy-broadcast binary arithmetic.
#include <cmath>

#include "ops/common.h"

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

template <typename C>
C apply(Arith op, C a, C b) {
  switch (op) {
    case Arith::kAdd: return a + b;
    case Arith::kSub: return a - b;
    case Arith::kMul: return a * b;
    case Arith::kDiv:
      if constexpr (std::is_integral_v<C>) return b == 0 ? C(0) : static_cast<C>(a / b);
      else return a / b;
    case Arith::kPow:
      if constexpr (std::is_integral_v<C>) return static_cast<C>(std::pow(double(a), double(b)));
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
  std::vector<float> exps;
  auto bvals = Tensor::view(b.dtype, b.dims, b.data, nullptr).to_float_vector();
  if (!bvals.ok()) return bvals.status();
  exps = std::move(bvals).value();
  for_each_broadcast<2>(y.dims, {a.dims, b.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    double r = std::pow(static_cast<double>(load(pa[o[0]])), static_cast<double>(exps[o[1]]));
    py[i] = store<T>(static_cast<compute_t<T>>(r));
  });
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  Arith op = arith_of(ctx.node().op_type);
  return dispatch<kNumeric>(ctx.input(0).dtype, ctx.node().describe(),
                  [&]<typename T>() { return run_typed<T>(ctx, op); });
}

}  // namespace

STREAMRT_REGISTER_OP(Add, {.op_type = "Add", .infer = infer, .cpu = cpu});
STREAMRT_REGISTER_OP(Sub, {.op_type = "Sub", .infer = infer, .cpu = cpu});
STREAMRT_REGISTER_OP(Mul, {.op_type = "Mul", .infer = infer, .cpu = cpu});
STREAMRT_REGISTER_OP(Div, {.op_type = "Div", .infer = infer, .cpu = cpu});
STREAMRT_REGISTER_OP(Pow, {.op_type = "Pow", .infer = infer, .cpu = cpu});

}  // namespace streamrt::ops
