// Add, Sub, Mul, Div, Pow on CUDA with numpy broadcasting; mirrors src/ops/binary_arith.cc:
//   - float16 / bfloat16 compute in float;
//   - integers wrap on overflow (done in the unsigned type, where the CPU relies on the
//     hardware's wrapping), integer division truncates toward zero and x / 0 is 0;
//     x / -1 is the wrapping negation (the CPU's int8 result; int32/int64 trap there);
//   - integer Pow is pow() in double, truncated to the integer type;
//   - Pow with an exponent of another dtype (any, the wide ones included) reads the exponent in
//     double, as the CPU does, and computes pow(double(base), exponent).
#include <cmath>

#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

enum class Arith { kAdd, kSub, kMul, kDiv, kPow };

template <Arith kOp, typename C>
__device__ __forceinline__ C arith(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    if constexpr (kOp == Arith::kAdd) return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    if constexpr (kOp == Arith::kSub) return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
    if constexpr (kOp == Arith::kMul) return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
    if constexpr (kOp == Arith::kDiv) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return wrapping_neg(a);
      return static_cast<C>(a / b);
    }
    if constexpr (kOp == Arith::kPow) return static_cast<C>(pow(static_cast<double>(a), static_cast<double>(b)));
  } else {
    if constexpr (kOp == Arith::kAdd) return a + b;
    if constexpr (kOp == Arith::kSub) return a - b;
    if constexpr (kOp == Arith::kMul) return a * b;
    if constexpr (kOp == Arith::kDiv) return a / b;
    if constexpr (kOp == Arith::kPow) return powf(a, b);
  }
}

template <typename T, Arith kOp>
struct ArithFn {
  __device__ __forceinline__ T operator()(T a, T b) const { return from_acc<T>(arith<kOp>(to_acc(a), to_acc(b))); }
};

// Exponent element in double, as the CPU reads it (Tensor::to_double_vector).
template <typename E>
__device__ __forceinline__ double exponent_value(E e) {
  return static_cast<double>(to_acc(e));
}

template <typename T, typename E>
struct PowMixedFn {
  __device__ __forceinline__ T operator()(T a, E b) const {
    const double r = pow(static_cast<double>(to_acc(a)), exponent_value(b));
    return from_acc<T>(static_cast<acc_t<T>>(r));
  }
};

const char* kernel_name(Arith op) {
  switch (op) {
    case Arith::kAdd: return "Add kernel";
    case Arith::kSub: return "Sub kernel";
    case Arith::kMul: return "Mul kernel";
    case Arith::kDiv: return "Div kernel";
    case Arith::kPow: return "Pow kernel";
  }
  return "arith kernel";
}

Status pow_mixed(CudaKernelContext& ctx) {
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  const std::string what = ctx.node().describe();
  return cuda_dispatch<ops::kNumeric>(a.dtype, what, [&]<typename T>() {
    return cuda_dispatch<ops::kNumeric | kCudaWideTypes>(b.dtype, what + " exponent", [&]<typename E>() -> Status {
      if constexpr (std::is_same_v<T, E>) {
        return internal_error(what + ": mixed-type Pow called with equal types");
      } else {
        return launch_elementwise(ctx, "Pow kernel", y.as<T>(), y.dims, PowMixedFn<T, E>{}, operand<T>(a),
                                  operand<E>(b));
      }
    });
  });
}

template <Arith kOp>
Status arith_cuda(CudaKernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_output(0))
    return ctx.error("needs inputs A and B and output C");
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  if (y.dtype != a.dtype)
    return ctx.error(std::string("output data type ") + dtype_name(y.dtype) + " differs from input " +
                     dtype_name(a.dtype));
  if (a.dtype != b.dtype) {
    if constexpr (kOp == Arith::kPow) return pow_mixed(ctx);
    return ctx.error(std::string("input types differ: ") + dtype_name(a.dtype) + " vs " + dtype_name(b.dtype));
  }
  return cuda_dispatch<ops::kNumeric>(a.dtype, ctx.node().describe(), [&]<typename T>() {
    return launch_elementwise(ctx, kernel_name(kOp), y.as<T>(), y.dims, ArithFn<T, kOp>{}, operand<T>(a),
                              operand<T>(b));
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Add, "Add", arith_cuda<Arith::kAdd>, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(Sub, "Sub", arith_cuda<Arith::kSub>, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(Mul, "Mul", arith_cuda<Arith::kMul>, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(Div, "Div", arith_cuda<Arith::kDiv>, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(Pow, "Pow", arith_cuda<Arith::kPow>, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
