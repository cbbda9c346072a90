// ArgMax / ArgMin (opset 1; 11 allows a negative axis, 12 adds select_last_index, 13
// bfloat16): int64 index of the largest / smallest element along `axis` (default 0), the axis
// kept as 1 (keepdims = 1, default) or dropped. Ties and NaN: see arg_better (ops/arg_reduce.h).
// The CUDA twin is backends/cuda/kernels/arg_reduce.cu.
#include "ops/arg_reduce.h"

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

Result<ArgReduceParams> arg_reduce_params(const ir::Node& node, const Dims& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0) return node.error(StatusCode::kInvalidModel, "input must have rank >= 1, got a scalar");
  SRT_ASSIGN_OR_RETURN(int64_t axis, node.attr_int("axis", 0));
  SRT_ASSIGN_OR_RETURN(int64_t keep, node.attr_int("keepdims", 1));
  SRT_ASSIGN_OR_RETURN(int64_t last, node.attr_int("select_last_index", 0));
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(node, axis, rank));
  ArgReduceParams p;
  p.is_max = node.op_type == "ArgMax";
  p.select_last = last != 0;
  const size_t ax = static_cast<size_t>(a);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d < ax) p.outer *= dims[d];
    else if (d > ax) p.inner *= dims[d];
    if (d != ax) p.out_dims.push_back(dims[d]);
    else if (keep != 0) p.out_dims.push_back(1);
  }
  p.dim = dims[ax];
  return p;
}

namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kNumeric));
  if (!ctx.input(0).has_shape) {
    ctx.set_output_unranked(0, DataType::kInt64);
    return ok_status();
  }
  // The same rule as the kernel; a dynamic dim just stays dynamic in the output dims.
  SRT_ASSIGN_OR_RETURN(ArgReduceParams p, arg_reduce_params(ctx.node(), ctx.input_dims(0)));
  ctx.set_output(0, DataType::kInt64, p.out_dims);
  return ok_status();
}

// Plan load: the axis indexes the input's dims.
Status verify(const InferContext& ctx) { return verify_axis_attr(ctx, "axis", 0); }

template <typename T>
void arg_reduce(const T* x, int64_t* y, const ArgReduceParams& p) {
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t j = 0; j < p.inner; ++j) {
      const T* row = x + o * p.dim * p.inner + j;
      int64_t best = 0;
      compute_t<T> bv = load(row[0]);
      for (int64_t k = 1; k < p.dim; ++k) {
        const compute_t<T> v = load(row[k * p.inner]);
        if (arg_better(v, bv, p.is_max, p.select_last)) {
          bv = v;
          best = k;
        }
      }
      y[o * p.inner + j] = best;
    }
  }
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(ArgReduceParams p, arg_reduce_params(ctx.node(), x.dims));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, DataType::kInt64, p.out_dims));
  if (ctx.output(0).numel() == 0) return ok_status();
  if (p.dim == 0) return ctx.error("cannot take the index of an extreme along an empty axis");
  return dispatch<kNumeric>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    arg_reduce<T>(x.as<T>(), ctx.output(0).as<int64_t>(), p);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(ArgMax, {.op_type = "ArgMax", .min_opset = 1, .infer = infer, .cpu = cpu, .verify = verify,
                              .cpu_dtypes = dtypes(kNumeric)});
STREAMRT_REGISTER_OP(ArgMin, {.op_type = "ArgMin", .min_opset = 1, .infer = infer, .cpu = cpu, .verify = verify,
                              .cpu_dtypes = dtypes(kNumeric)});

}  // namespace streamrt::ops
