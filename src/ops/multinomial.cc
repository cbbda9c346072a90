// Multinomial (opsets 7, 22): input [batch, classes] of unnormalized log-probabilities (float16,
// float, double, bfloat16); output [batch, sample_size] (attribute, default 1) of class indices,
// int32 (attribute `dtype` 6, the default) or int64 (7). Each sample draws u in [0, 1) and takes
// the smallest class whose cumulative e^(x - max) exceeds u times the row's total
// (random::multinomial_sample): a class of log-probability -inf is never drawn; a row with no
// finite log-probability (all -inf, or any +inf / NaN maximum) gives class 0. `seed` (a float)
// makes the draws reproducible: the determinism contract, shared with the CUDA kernel
// (backends/cuda/kernels/random.cu), is in ops/random_util.h. Nondeterministic: never folded.
#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/random_util.h"

namespace streamrt::ops::random {
namespace {

constexpr unsigned kLogitTypes = kAllFloats;

Result<DataType> output_dtype(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t t, node.attr_int("dtype", 6));
  if (t == 6) return DataType::kInt32;
  if (t == 7) return DataType::kInt64;
  return node.error(StatusCode::kInvalidModel, "attribute 'dtype' = " + std::to_string(t) + " is not int32 (6) or int64 (7)");
}

Result<int64_t> sample_size(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t s, node.attr_int("sample_size", 1));
  if (s < 1 || s > kMaxAttrExtent)
    return node.error(StatusCode::kInvalidModel, "attribute 'sample_size' = " + std::to_string(s) + " is out of range");
  return s;
}

Status verify(const InferContext& ctx) { return verify_attr_range(ctx.node(), "sample_size", 1, kMaxAttrExtent); }

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kLogitTypes));
  SRT_ASSIGN_OR_RETURN(DataType t, output_dtype(ctx.node()));
  SRT_ASSIGN_OR_RETURN(int64_t s, sample_size(ctx.node()));
  const TensorInfo& x = ctx.input(0);
  if (x.has_shape && x.dims.size() != 2)
    return ctx.error("input must be 2-D [batch_size, class_size], got shape " + dims_to_string(x.dims));
  if (x.has_shape && x.dims[1] == 0) return ctx.error("input has no classes (class_size 0)");
  ctx.set_output(0, t, {x.has_shape ? x.dims[0] : kDynamicDim, s});
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(MultinomialArgs a, multinomial_args(ctx));
  const void* x = ctx.input(0).data;
  void* y = ctx.output(0).data;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t s = 0; s < a.samples; ++s) {
      const int64_t i = b * a.samples + s;
      const int64_t c = multinomial_sample(a.key, x, a.input, a.classes, b, static_cast<uint64_t>(i));
      if (a.output == DataType::kInt64) static_cast<int64_t*>(y)[i] = c;
      else static_cast<int32_t*>(y)[i] = static_cast<int32_t>(c);
    }
  return ok_status();
}

}  // namespace

Result<MultinomialArgs> multinomial_args(const KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  if ((dtype_set_of(x.dtype) & kLogitTypes) == 0) return ctx.unsupported(std::string("input type ") + dtype_name(x.dtype));
  if (x.dims.size() != 2 || x.dims[1] == 0)
    return ctx.error("input must be 2-D [batch_size, class_size] with classes, got shape " + dims_to_string(x.dims));
  MultinomialArgs a;
  a.input = x.dtype;
  a.batch = x.dims[0];
  a.classes = x.dims[1];
  SRT_ASSIGN_OR_RETURN(a.output, output_dtype(ctx.node()));
  SRT_ASSIGN_OR_RETURN(a.samples, sample_size(ctx.node()));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, a.output, {a.batch, a.samples}));
  SRT_ASSIGN_OR_RETURN(a.key, random_key(ctx.node()));
  return a;
}

STREAMRT_REGISTER_OP(Multinomial, {.op_type = "Multinomial", .min_opset = 7, .infer = infer, .cpu = cpu,
                                   .verify = verify, .cpu_dtypes = dtypes(kLogitTypes),
                                   .nondeterministic = true});

}  // namespace streamrt::ops::random
