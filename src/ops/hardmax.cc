// Hardmax (opset 1; 11 allows a negative axis; 13 changes the axis meaning and adds bfloat16):
// 1 at the first maximum of each row, 0 elsewhere. The rows are Softmax's (ops/softmax.h):
//   opset < 13: the input is coerced to 2-D at `axis` (default 1): each row of
//               prod(dims[axis:]) elements has one 1;
//   opset >= 13: rows run along the single axis `axis` (default -1).
// "First maximum" is arg_better's rule (ops/arg_reduce.h), so a NaN row gets its 1 at the
// first NaN, as numpy's argmax in the ONNX reference. The CUDA twin is kernels/hardmax.cu.
#include "ops/arg_reduce.h"
#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/softmax.h"

namespace streamrt::ops {
namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  if (ctx.input(0).has_shape)
    SRT_RETURN_IF_ERROR(softmax_axis(ctx.node(), static_cast<int64_t>(ctx.input_dims(0).size())).status());
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// Plan load: axis within the input's rank.
Status verify(const InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.input(0).has_shape) return ok_status();
  return softmax_axis(ctx.node(), static_cast<int64_t>(ctx.input_dims(0).size())).status();
}

template <typename T>
void hardmax_rows(const T* x, T* y, const SoftmaxGeometry& g) {
  for (int64_t o = 0; o < g.outer; ++o) {
    for (int64_t j = 0; j < g.inner; ++j) {
      const int64_t base = o * g.dim * g.inner + j;
      int64_t best = 0;
      compute_t<T> bv = load(x[base]);
      for (int64_t k = 0; k < g.dim; ++k) {
        const compute_t<T> v = load(x[base + k * g.inner]);
        if (k > 0 && arg_better(v, bv, true, false)) {
          bv = v;
          best = k;
        }
        y[base + k * g.inner] = store<T>(0);
      }
      y[base + best * g.inner] = store<T>(1);
    }
  }
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, x.dims));
  SRT_ASSIGN_OR_RETURN(SoftmaxGeometry g, softmax_geometry(ctx.node(), x.dims));
  if (x.numel() == 0) return ok_status();
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    hardmax_rows<T>(x.as<T>(), ctx.output(0).as<T>(), g);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Hardmax, {.op_type = "Hardmax", .min_opset = 1, .infer = infer, .cpu = cpu, .verify = verify,
                               .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
