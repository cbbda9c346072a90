// CumSum (opset 11; 14 adds float16 / bfloat16): running sum of x along the axis given by
// input 1 (an int32 / int64 scalar, read on the host: a shape input). exclusive = 1 leaves
// the current element out (the first sum is 0), reverse = 1 sums from the end. Floats
// accumulate in float (half types too), integers wrap instead of overflowing. The CUDA twin is
// backends/cuda/kernels/cumsum.cu.
#include "ops/cumsum.h"

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

Result<CumSumParams> cumsum_params(const ir::Node& node, const Dims& dims, int64_t axis) {
  SRT_ASSIGN_OR_RETURN(int64_t exclusive, node.attr_int("exclusive", 0));
  SRT_ASSIGN_OR_RETURN(int64_t reverse, node.attr_int("reverse", 0));
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0) return node.error(StatusCode::kInvalidModel, "input x must have rank >= 1, got a scalar");
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(node, axis, rank));
  CumSumParams p;
  p.exclusive = exclusive != 0;
  p.reverse = reverse != 0;
  const size_t ax = static_cast<size_t>(a);
  p.outer = dims_product(dims, 0, ax);
  p.dim = dims[ax];
  p.inner = dims_product(dims, ax + 1, dims.size());
  return p;
}

Result<int64_t> cumsum_axis(const ir::Node& node, DataType dtype, const Dims& dims,
                            const std::vector<int64_t>& values) {
  if (dtype != DataType::kInt64 && dtype != DataType::kInt32)
    return node.error(StatusCode::kInvalidModel, std::string("axis must be int32 or int64, got ") + dtype_name(dtype));
  if (values.size() != 1)
    return node.error(StatusCode::kInvalidModel, "axis must hold one value, got shape " + dims_to_string(dims));
  return values[0];
}

namespace {

constexpr unsigned kTypes = kFloats | kFloat64 | kSignedInts | kUnsigned;

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kTypes));
  if (!ctx.has_input(1)) return ctx.error("missing required input 1 (axis)");
  const TensorInfo& ax = ctx.input(1);
  if (ax.dtype != DataType::kInt64 && ax.dtype != DataType::kInt32)
    return ctx.error(std::string("axis must be int32 or int64, got ") + dtype_name(ax.dtype));
  if (ax.has_shape && dims_static(ax.dims) && dims_numel(ax.dims) != 1)
    return ctx.error("axis must hold one value, got shape " + dims_to_string(ax.dims));
  if (const Tensor* v = ctx.input_value(1); v && ctx.input(0).has_shape) {
    SRT_ASSIGN_OR_RETURN(auto axis, known_int_values(ctx, 1, "axis"));
    SRT_RETURN_IF_ERROR(normalize_axis(ctx, axis.at(0), static_cast<int64_t>(ctx.input_dims(0).size())).status());
  }
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// Integer sums wrap (two's complement) instead of overflowing.
template <typename C>
C add(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(a) + static_cast<std::make_unsigned_t<C>>(b));
  else return a + b;
}

template <typename T>
void cumsum(const T* x, T* y, const CumSumParams& p) {
  using C = compute_t<T>;
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t j = 0; j < p.inner; ++j) {
      const int64_t base = o * p.dim * p.inner + j;
      C acc = C(0);
      for (int64_t s = 0; s < p.dim; ++s) {
        const int64_t at = base + (p.reverse ? p.dim - 1 - s : s) * p.inner;
        const C v = load(x[at]);
        if (!p.exclusive) acc = add(acc, v);
        y[at] = store<T>(acc);
        if (p.exclusive) acc = add(acc, v);
      }
    }
  }
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  const TensorRef& x = ctx.input(0);
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, x.dims));
  const TensorRef& ax = ctx.input(1);
  SRT_ASSIGN_OR_RETURN(int64_t axis, cumsum_axis(ctx.node(), ax.dtype, ax.dims, read_int_values(ax)));
  SRT_ASSIGN_OR_RETURN(CumSumParams p, cumsum_params(ctx.node(), x.dims, axis));
  return dispatch<kTypes>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    cumsum<T>(x.as<T>(), ctx.output(0).as<T>(), p);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(CumSum, {.op_type = "CumSum", .min_opset = 11, .infer = infer, .cpu = cpu, .shape_inputs = {1},
                              .cpu_dtypes = dtypes(kTypes)});

}  // namespace streamrt::ops
