// NonZero (opset 9, 13): the indices of X's non-zero elements as an int64 [rank, count] tensor,
// column j holding the j-th non-zero element's index in row-major order (numpy.nonzero stacked). A
// 0-D X counts as [1] (numpy's atleast_1d). NaN is non-zero, -0.0 is zero.
// The count depends on X's contents, so X is a shape input: the builder knows the count when X is
// a constant (and folds the node), else the output is [rank, -1]; at run time every device gives
// the shape rule X's contents on the host (the CUDA engine runs this kernel there, as for any op
// without a CUDA kernel), and the output's memory is sized then.
#include "ops/common.h"

namespace streamrt::ops {
namespace {

template <typename T>
bool nonzero(T v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else return load(v) != compute_t<T>(0);
}

// Calls f(flat index) for each non-zero element of the `n` elements at `data` of type `t`.
template <typename F>
Status for_each_nonzero(DataType t, const void* data, int64_t n, const std::string& what, F&& f) {
  return dispatch<kAll>(t, what, [&]<typename T>() {
    const T* x = static_cast<const T*>(data);
    for (int64_t i = 0; i < n; ++i)
      if (nonzero(x[i])) f(i);
    return ok_status();
  });
}

int64_t rank_of(const Dims& d) { return d.empty() ? 1 : static_cast<int64_t>(d.size()); }

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  const TensorInfo& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_unranked(0, DataType::kInt64);
    return ok_status();
  }
  int64_t count = kDynamicDim;
  if (const Tensor* v = ctx.input_value(0)) {
    count = 0;
    SRT_RETURN_IF_ERROR(for_each_nonzero(v->dtype(), v->data(), v->numel(), ctx.node().describe(), [&](int64_t) { ++count; }));
  }
  ctx.set_output(0, DataType::kInt64, {rank_of(x.dims), count});
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  const int64_t rank = rank_of(x.dims);
  if (y.dtype != DataType::kInt64 || y.dims.size() != 2 || y.dims[0] != rank)
    return ctx.error("output must be int64 [" + std::to_string(rank) + ", count], got " + dims_to_string(y.dims));
  const int64_t count = y.dims[1];
  const Dims shape = x.dims.empty() ? Dims{1} : x.dims;
  int64_t j = 0;
  int64_t* out = y.as<int64_t>();
  Status st = for_each_nonzero(x.dtype, x.data, x.numel(), ctx.node().describe(), [&](int64_t flat) {
    if (j < count) {
      for (int64_t d = rank - 1; d >= 0; --d) {
        out[d * count + j] = flat % shape[static_cast<size_t>(d)];
        flat /= shape[static_cast<size_t>(d)];
      }
    }
    ++j;
  });
  SRT_RETURN_IF_ERROR(st);
  // The output was sized from the same contents: a different count means they changed under us.
  if (j != count) return ctx.error("found " + std::to_string(j) + " non-zero elements, the output holds " + std::to_string(count));
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(NonZero, {.op_type = "NonZero", .min_opset = 9, .infer = infer, .cpu = cpu, .shape_inputs = {0},
                               .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
