// LRN (opsets 1, 13): local response normalization across channels of X [N, C, D1, ...]:
// y = x / (bias + alpha / size * sum of x^2 over the channels c - floor((size - 1) / 2) ..
// c + ceil((size - 1) / 2) that exist) ^ beta. Sums in double.
#include <cmath>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {
namespace {

struct LrnAttrs {
  int64_t size = 1;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
};

Result<LrnAttrs> read_lrn(const ir::Node& node) {
  LrnAttrs a;
  SRT_ASSIGN_OR_RETURN(a.size, node.attr_int("size"));
  if (a.size < 1 || a.size > kMaxAttrExtent) return node.error(StatusCode::kInvalidModel, "size " + std::to_string(a.size) + " is out of range");
  SRT_ASSIGN_OR_RETURN(float alpha, node.attr_float("alpha", 1e-4f));
  SRT_ASSIGN_OR_RETURN(float beta, node.attr_float("beta", 0.75f));
  SRT_ASSIGN_OR_RETURN(float bias, node.attr_float("bias", 1.0f));
  a.alpha = alpha, a.beta = beta, a.bias = bias;
  return a;
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  SRT_RETURN_IF_ERROR(read_lrn(ctx.node()).status());
  if (ctx.input(0).has_shape && ctx.input_dims(0).size() < 3)
    return ctx.error("X has shape " + dims_to_string(ctx.input_dims(0)) + ", expected rank >= 3");
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

Status verify(const InferContext& ctx) { return verify_attr_range(ctx.node(), "size", 1, kMaxAttrExtent); }

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(LrnAttrs a, read_lrn(ctx.node()));
  if (x.dims.size() < 3) return ctx.error("X has shape " + dims_to_string(x.dims) + ", expected rank >= 3");
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, x.dims));
  if (x.numel() == 0) return ok_status();
  const int64_t n = x.dims[0], c = x.dims[1], inner = dims_product(x.dims, 2, x.dims.size());
  const int64_t before = (a.size - 1) / 2, after = a.size - 1 - before;
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* px = x.as<T>();
    T* py = ctx.output(0).as<T>();
    for (int64_t i = 0; i < n * c * inner; ++i) {
      const int64_t ch = (i / inner) % c, base = i - ch * inner;
      double sq = 0;
      for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
        const double v = static_cast<double>(load(px[base + k * inner]));
        sq += v * v;
      }
      const double v = static_cast<double>(load(px[i])) / std::pow(a.bias + a.alpha / static_cast<double>(a.size) * sq, a.beta);
      py[i] = store<T>(static_cast<compute_t<T>>(v));
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(LRN, {.op_type = "LRN", .infer = infer, .cpu = cpu, .verify = verify,
                           .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
