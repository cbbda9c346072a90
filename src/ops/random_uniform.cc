// RandomUniform (opsets 1, 22) and RandomUniformLike (opsets 1, 22): values drawn uniformly
// from [low, high) (attributes, defaults 0 and 1). RandomUniform's dims are attribute `shape`
// and its type attribute `dtype` (default float); RandomUniformLike takes the dims of its input
// (whose values are never read) and `dtype` or, without it, the input's type. Output types:
// float16, float, double, bfloat16. A value that rounds up to `high` in the output type is
// stepped back below it. `seed` (a float) makes the values reproducible: the determinism
// contract, shared with the CUDA kernel (backends/cuda/kernels/random.cu), is in
// ops/random_util.h. Both are nondeterministic: never folded into constants at build time.
#include "ops/random_util.h"

namespace streamrt::ops::random {

Result<UniformArgs> uniform_args(const KernelContext& ctx, bool like) {
  SRT_ASSIGN_OR_RETURN(FillArgs f, fill_args(ctx, like, {"low", 0.f}, {"high", 1.f}));
  // high - low once, here: every device steps from the same double.
  return UniformArgs{f.key, f.a, f.b - f.a, f.b, f.dtype};
}

// Registered by hand: the schema comes from fill_schema, shared with the other fill ops.
template <bool kLike>
constexpr KernelFn kCpu = fill_cpu<UniformArgs, uniform_args, uniform_element, kLike>;
static const OpRegistrar kRegisterRandomUniform(fill_schema("RandomUniform", kCpu<false>, false));
static const OpRegistrar kRegisterRandomUniformLike(fill_schema("RandomUniformLike", kCpu<true>, true));

}  // namespace streamrt::ops::random
