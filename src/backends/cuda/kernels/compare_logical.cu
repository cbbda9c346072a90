// Comparisons and logical ops on CUDA, numpy broadcast, bool output. Mirrors
// src/ops/compare.cc and src/ops/logical.cc:
//   - Equal (numeric and bool), Less, Greater, LessOrEqual, GreaterOrEqual (numeric); half
//     types compare in float, NaN compares false;
//   - Not, And, Or, Xor on bool; bool inputs are read as bytes (non-zero = true), outputs 0 / 1.
#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

struct Equal {
  static constexpr unsigned kTypes = ops::kAll;
  template <typename C> __device__ bool operator()(C a, C b) const { return a == b; }
};
struct Less {
  static constexpr unsigned kTypes = ops::kNumeric;
  template <typename C> __device__ bool operator()(C a, C b) const { return a < b; }
};
struct Greater {
  static constexpr unsigned kTypes = ops::kNumeric;
  template <typename C> __device__ bool operator()(C a, C b) const { return a > b; }
};
struct LessOrEqual {
  static constexpr unsigned kTypes = ops::kNumeric;
  template <typename C> __device__ bool operator()(C a, C b) const { return a <= b; }
};
struct GreaterOrEqual {
  static constexpr unsigned kTypes = ops::kNumeric;
  template <typename C> __device__ bool operator()(C a, C b) const { return a >= b; }
};

template <typename T, typename Op>
struct CompareFn {
  __device__ __forceinline__ bool operator()(T a, T b) const { return Op{}(to_acc(a), to_acc(b)); }
};

// Bool inputs as bytes: compare (and combine) truth values.
template <typename Op>
struct BoolBinaryFn {
  __device__ __forceinline__ bool operator()(uint8_t a, uint8_t b) const { return Op{}(a != 0, b != 0); }
};

Status check_binary_io(const CudaKernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_output(0))
    return ctx.error("needs inputs A and B and output C");
  if (ctx.output(0).dtype != DataType::kBool) return ctx.error("output must be bool");
  return ok_status();
}

template <typename Op>
Status compare_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_binary_io(ctx));
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  if (a.dtype != b.dtype) return ctx.error("input data types differ");
  if constexpr ((Op::kTypes & ops::kBools) != 0) {  // Equal on bool: compare truth values
    if (a.dtype == DataType::kBool)
      return launch_elementwise(ctx, "compare kernel", y.as<bool>(), y.dims, BoolBinaryFn<Op>{},
                                operand<uint8_t>(a), operand<uint8_t>(b));
  }
  return cuda_dispatch<Op::kTypes & ops::kNumeric>(a.dtype, ctx.node().describe(), [&]<typename T>() {
    return launch_elementwise(ctx, "compare kernel", y.as<bool>(), y.dims, CompareFn<T, Op>{}, operand<T>(a),
                              operand<T>(b));
  });
}

struct And { __device__ bool operator()(bool a, bool b) const { return a && b; } };
struct Or { __device__ bool operator()(bool a, bool b) const { return a || b; } };
struct Xor { __device__ bool operator()(bool a, bool b) const { return a != b; } };

template <typename Op>
Status logical_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(check_binary_io(ctx));
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  if (a.dtype != DataType::kBool || b.dtype != DataType::kBool) return ctx.error("inputs must be bool");
  return launch_elementwise(ctx, "logical kernel", y.as<bool>(), y.dims, BoolBinaryFn<Op>{}, operand<uint8_t>(a),
                            operand<uint8_t>(b));
}

struct NotFn {
  __device__ __forceinline__ bool operator()(uint8_t x) const { return x == 0; }
};

Status not_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input X and output Y");
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.dtype != DataType::kBool || y.dtype != DataType::kBool) return ctx.error("input and output must be bool");
  if (x.numel() != y.numel())
    return ctx.error("input 0 has shape " + dims_to_string(x.dims) + " but output 0 has shape " +
                     dims_to_string(y.dims));
  return launch_same_shape(ctx, "Not kernel", y.as<bool>(), y.numel(), NotFn{}, x.as<const uint8_t>());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Equal, "Equal", compare_cuda<Equal>, cuda_dtypes(ops::kAll));
STREAMRT_REGISTER_CUDA_KERNEL(Less, "Less", compare_cuda<Less>, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(Greater, "Greater", compare_cuda<Greater>, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(LessOrEqual, "LessOrEqual", compare_cuda<LessOrEqual>, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(GreaterOrEqual, "GreaterOrEqual", compare_cuda<GreaterOrEqual>,
                              cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(Not, "Not", not_cuda, ops::dtype_bit(DataType::kBool));
STREAMRT_REGISTER_CUDA_KERNEL(And, "And", logical_cuda<And>, ops::dtype_bit(DataType::kBool));
STREAMRT_REGISTER_CUDA_KERNEL(Or, "Or", logical_cuda<Or>, ops::dtype_bit(DataType::kBool));
STREAMRT_REGISTER_CUDA_KERNEL(Xor, "Xor", logical_cuda<Xor>, ops::dtype_bit(DataType::kBool));

}  // namespace streamrt::cuda
