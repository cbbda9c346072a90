// Bernoulli (opsets 15, 22): y[i] = 1 with probability x[i], else 0. Input: float16, float,
// double, bfloat16 probabilities (a probability outside [0, 1] acts as the nearer end: never /
// always; NaN never); output: attribute `dtype` or, without it, the input's type (any type: 1 and
// 0 in it). Each element draws u in [0, 1) with 53 bits and compares u < p, so p = 0 never and
// p = 1 always gives 1. `seed` (a float) makes the draws reproducible: the determinism contract,
// shared with the CUDA kernel (backends/cuda/kernels/random.cu), is in ops/random_util.h.
// Nondeterministic: never folded into a constant at build time.
#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/eye_like.h"
#include "ops/random_util.h"

namespace streamrt::ops::random {
namespace {

constexpr unsigned kProbabilityTypes = kAllFloats;

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kProbabilityTypes));
  SRT_ASSIGN_OR_RETURN(DataType t, bernoulli_dtype(ctx.node(), ctx.input_dtype(0)));
  SRT_RETURN_IF_ERROR(one_bits(ctx.node(), t).status());
  ctx.set_output_like(0, t, 0);
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  if ((dtype_set_of(x.dtype) & kProbabilityTypes) == 0)
    return ctx.unsupported(std::string("input type ") + dtype_name(x.dtype));
  SRT_ASSIGN_OR_RETURN(DataType t, bernoulli_dtype(ctx.node(), x.dtype));
  SRT_ASSIGN_OR_RETURN(uint64_t one, one_bits(ctx.node(), t));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, t, x.dims));
  SRT_ASSIGN_OR_RETURN(Key key, random_key(ctx.node()));
  const size_t es = dtype_size(t);
  char* y = static_cast<char*>(ctx.output(0).data);
  const uint64_t zero = 0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i)
    std::memcpy(y + static_cast<size_t>(i) * es, bernoulli_element(key, load_float(x.data, x.dtype, i), i) ? &one : &zero, es);
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Bernoulli, {.op_type = "Bernoulli", .min_opset = 15, .infer = infer, .cpu = cpu,
                                 .cpu_dtypes = dtypes(kProbabilityTypes), .output_dtype_attr = "dtype",
                                 .nondeterministic = true});

}  // namespace streamrt::ops::random
