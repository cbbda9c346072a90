// RandomNormal (opsets 1, 22) and RandomNormalLike (opsets 1, 22): values drawn from the normal
// distribution of mean `mean` and standard deviation `scale` (attributes, defaults 0 and 1).
// RandomNormal's dims are attribute `shape` and its type attribute `dtype` (default float);
// RandomNormalLike takes the dims of its input (whose values are never read) and `dtype` or,
// without it, the input's type. Output types: float16, float, double, bfloat16. Box-Muller over
// Philox draws; `seed` (a float) makes the values reproducible: the determinism contract, shared
// with the CUDA kernel (backends/cuda/kernels/random.cu), is in ops/random_util.h. Both are
// nondeterministic: never folded into constants at build time.
#include "ops/random_util.h"

namespace streamrt::ops::random {

Result<NormalArgs> normal_args(const KernelContext& ctx, bool like) {
  SRT_ASSIGN_OR_RETURN(FillArgs f, fill_args(ctx, like, {"mean", 0.f}, {"scale", 1.f}));
  return NormalArgs{f.key, f.a, f.b, f.dtype};
}

// Registered by hand: the schema comes from fill_schema, shared with the other fill ops.
template <bool kLike>
constexpr KernelFn kCpu = fill_cpu<NormalArgs, normal_args, normal_element, kLike>;
static const OpRegistrar kRegisterRandomNormal(fill_schema("RandomNormal", kCpu<false>, false));
static const OpRegistrar kRegisterRandomNormalLike(fill_schema("RandomNormalLike", kCpu<true>, true));

}  // namespace streamrt::ops::random
