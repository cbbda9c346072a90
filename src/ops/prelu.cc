// PRelu (opset 7; 9 adds int32 / int64, 16 bfloat16): y = x < 0 ? slope * x : x. From opset 7
// the slope broadcasts unidirectionally to X (numpy rules, X's shape is the output's); earlier
// opsets' channel-wise slope is not supported (min_opset 7). Integer products wrap instead of
// overflowing. The CUDA twin is backends/cuda/kernels/prelu.cu.
#include "ops/data_movement.h"
#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

constexpr unsigned kTypes = kFloats | kSignedInts;

// Slope dims must broadcast to X's: right-aligned, each 1 or equal (a dynamic dim may be either).
Status check_unidirectional(const InferContext& ctx) {
  const Dims& x = ctx.input_dims(0);
  const Dims& s = ctx.input_dims(1);
  bool ok = s.size() <= x.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    const int64_t ds = s[s.size() - 1 - i];
    const int64_t dx = x[x.size() - 1 - i];
    ok = ds == 1 || ds == dx || ds < 0 || dx < 0;
  }
  if (!ok)
    return ctx.error("slope of shape " + dims_to_string(s) + " does not broadcast to X of shape " +
                     dims_to_string(x));
  return ok_status();
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kTypes));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kTypes));
  SRT_RETURN_IF_ERROR(require_same_dtype(ctx, 0, 1));
  if (ctx.input(0).has_shape && ctx.input(1).has_shape) SRT_RETURN_IF_ERROR(check_unidirectional(ctx));
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

template <typename C>
C prelu_value(C x, C s) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return x < 0 ? static_cast<C>(static_cast<U>(s) * static_cast<U>(x)) : x;
  } else {
    return x < 0 ? s * x : x;
  }
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  const TensorRef& x = ctx.input(0);
  const TensorRef& s = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, x.dims));
  if (s.dtype != x.dtype) return ctx.error("slope must have X's data type");
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, s.dims, x.dims, "slope"));
  return dispatch<kTypes>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* px = x.as<T>();
    const T* ps = s.as<T>();
    T* py = y.as<T>();
    for_each_broadcast<2>(x.dims, {x.dims, s.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      py[i] = store<T>(prelu_value<compute_t<T>>(load(px[o[0]]), load(ps[o[1]])));
    });
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(PRelu, {.op_type = "PRelu", .min_opset = 7, .infer = infer, .cpu = cpu,
                             .cpu_dtypes = dtypes(kTypes)});

}  // namespace streamrt::ops
