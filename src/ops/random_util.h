// Random numbers shared by RandomUniform(Like), RandomNormal(Like), Bernoulli and Multinomial
// (ops/random_uniform.cc, random_normal.cc, bernoulli.cc, multinomial.cc) and their CUDA twins
// (backends/cuda/kernels/random.cu).
//
// Determinism contract:
//  - Every element is a pure function of (key, stream, element index): Philox4x32-10, a
//    counter-based generator, so no state is carried from element to element or run to run.
//  - With the `seed` attribute set, key = a hash of the seed's float bits and stream = 0: the
//    same plan gives the same values at every run, on every device. The CPU and CUDA kernels
//    compute each element through the inline functions below with the same roundings (explicit
//    products, no fused multiply-add; log / cos / exp are this file's own polynomials, not the
//    platform's), so a seeded step is bitwise identical on the CPU and on CUDA.
//  - Without `seed`, key = entropy drawn once per process (std::random_device) and stream = a
//    counter that advances at every execution of a random step (the CPU: a process-wide atomic
//    counter per step run; CUDA: a device counter each thread block bumps, so that a replayed
//    CUDA graph still draws new values). Each run and each random node draws new values, as
//    onnxruntime does; the values are not reproducible.
//  - Two nodes with the same seed (and shape) give the same values, as in onnxruntime.
// The ops are marked OpSchema::nondeterministic: the builder never folds them into constants.
#pragma once

#include <math.h>
#include <stdint.h>

#include "ops/quantize_util.h"  // round_to / mul_rn / store_real: the roundings quantization shares

#if defined(__CUDACC__)
#define SRT_RANDOM_HD __host__ __device__
#else
#define SRT_RANDOM_HD
#endif

namespace streamrt::ops::random {

// Philox key and stream of one step execution (see the contract above). `seeded` false: the
// CUDA kernels replace `stream` by a per-block device counter.
struct Key {
  uint64_t key = 0;
  uint64_t stream = 0;
  bool seeded = false;
};

struct Draw {
  uint32_t w[4];
};

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") of the counter
// (index, stream) under the key.
SRT_RANDOM_HD inline Draw philox(const Key& k, uint64_t index) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = static_cast<uint32_t>(k.stream), c3 = static_cast<uint32_t>(k.stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(k.key), k1 = static_cast<uint32_t>(k.key >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0, p1 = uint64_t{0xCD9E8D57u} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Draw{{c0, c1, c2, c3}};
}

// splitmix64's finalizer: spreads a seed's bits over the whole key.
SRT_RANDOM_HD inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform value k / 2^bits in [0, 1) from words w[i], w[i + 1] (bits <= 53): exact in double.
SRT_RANDOM_HD inline double unit(const Draw& d, int i, int bits) {
  const uint64_t b = (uint64_t{d.w[i]} << 32) | d.w[i + 1];
  return ldexp(static_cast<double>(b >> (64 - bits)), -bits);
}

// The float format of an output: its precision for round_to and the bits a uniform value in
// [0, 1) may have so that it stays below 1 once rounded (the significand's width).
struct Format {
  quant::Precision precision = quant::Precision::kFloat32;
  int bits = 24;          // significand bits, the hidden one included
  int min_exp = -126;     // smallest normal exponent
};

SRT_RANDOM_HD inline Format format_of(DataType t) {
  switch (t) {
    case DataType::kFloat16: return {quant::Precision::kFloat16, 11, -14};
    case DataType::kBFloat16: return {quant::Precision::kBFloat16, 8, -126};
    case DataType::kFloat64: return {quant::Precision::kFloat64, 53, -1022};
    default: return {quant::Precision::kFloat32, 24, -126};
  }
}

// A value of format f below v (v representable in f and finite): v less one unit in its last place.
SRT_RANDOM_HD inline double step_below(double v, const Format& f) {
  int e = 0;
  frexp(v, &e);
  const int lead = v == 0 || e - 1 < f.min_exp ? f.min_exp : e - 1;
  return v - ldexp(1.0, lead - (f.bits - 1));
}

// Stores v (a double) as element i of a float32 / float16 / bfloat16 / float64 tensor, rounded once.
SRT_RANDOM_HD inline void store(void* p, DataType t, int64_t i, double v) {
  if (t == DataType::kFloat64) static_cast<double*>(p)[i] = v;
  else quant::store_real(p, t, i, v);
}

// p(x) = c[0] + x * (c[1] + x * (...)), with rounded products (no fused multiply-add).
SRT_RANDOM_HD inline double horner(double x, const double* c, int n) {
  double p = c[n - 1];
  for (int k = n - 2; k >= 0; --k) p = quant::mul_rn(p, x) + c[k];
  return p;
}

// Natural logarithm of x in (0, 1]: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log m =
// 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172: eleven terms of the series reach double precision.
SRT_RANDOM_HD inline double log_unit(double x) {
  int e = 0;
  double m = frexp(x, &e);
  if (m < 0.70710678118654752) {
    m *= 2;
    --e;
  }
  const double s = (m - 1) / (m + 1), s2 = quant::mul_rn(s, s);
  const double c[12] = {1.0,        1.0 / 3,  1.0 / 5,  1.0 / 7,  1.0 / 9,  1.0 / 11,
                        1.0 / 13,   1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23};
  return quant::mul_rn(static_cast<double>(e), 0.69314718055994531) + quant::mul_rn(2 * s, horner(s2, c, 12));
}

// cos(2 pi t) for t in [0, 1): t = q / 4 + f with |f| <= 1/8 (exact), a = 2 pi f in
// [-pi/4, pi/4], then cos a / sin a by their Taylor series (nine terms each).
SRT_RANDOM_HD inline double cos_turns(double t) {
  const double q = rint(t * 4);  // t * 4 is exact
  const double a = quant::mul_rn(t - q * 0.25, 6.283185307179586), a2 = quant::mul_rn(a, a);
  const double cc[9] = {1.0, -1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800,
                        1.0 / 479001600, -1.0 / 87178291200.0, 1.0 / 20922789888000.0};
  const double sc[9] = {1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800,
                        1.0 / 6227020800.0, -1.0 / 1307674368000.0, 1.0 / 355687428096000.0};
  const double c = horner(a2, cc, 9), s = quant::mul_rn(a, horner(a2, sc, 9));
  switch (static_cast<int>(q) & 3) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
  }
}

// e^x for x <= 0 (0 for -infinity): x = n ln 2 + r, |r| <= ln 2 / 2, e^r by fourteen terms.
SRT_RANDOM_HD inline double exp_nonpositive(double x) {
  if (!(x > -746)) return 0;  // underflows (and -inf, NaN)
  const double n = rint(quant::mul_rn(x, 1.4426950408889634));
  const double r = (x - quant::mul_rn(n, 0.693145751953125)) - quant::mul_rn(n, 1.4286068203094173e-06);
  const double c[14] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
                        1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
  return ldexp(horner(r, c, 14), static_cast<int>(n));
}

// Element i of a float32 / float16 / bfloat16 / float64 tensor as a double.
SRT_RANDOM_HD inline double load_float(const void* p, DataType t, int64_t i) {
  return t == DataType::kFloat64 ? static_cast<const double*>(p)[i] : quant::load_real(p, t, i);
}

// ---- One element of each op ----

// RandomUniform(Like): low + (high - low) * u, rounded to the output's type, kept below high
// (a rounding up to high is stepped back) when high > low.
struct UniformArgs {
  Key key;
  double low = 0, range = 1, high = 1;
  DataType dtype = DataType::kFloat32;
};
SRT_RANDOM_HD inline void uniform_element(const UniformArgs& a, void* y, int64_t i) {
  const Format f = format_of(a.dtype);
  const double u = unit(philox(a.key, static_cast<uint64_t>(i)), 0, f.bits);
  double v = quant::round_to(f.precision, a.low + quant::mul_rn(a.range, u));
  if (v >= a.high && a.high > a.low && v - v == 0) v = step_below(v, f);
  store(y, a.dtype, i, v);
}

// RandomNormal(Like): mean + scale * z, z standard normal by Box-Muller (u1 in (0, 1]).
struct NormalArgs {
  Key key;
  double mean = 0, scale = 1;
  DataType dtype = DataType::kFloat32;
};
SRT_RANDOM_HD inline double standard_normal(const Draw& d) {
  const double u1 = 1.0 - unit(d, 0, 53), u2 = unit(d, 2, 53);
  return quant::mul_rn(sqrt(-2 * log_unit(u1)), cos_turns(u2));
}
SRT_RANDOM_HD inline void normal_element(const NormalArgs& a, void* y, int64_t i) {
  const double z = standard_normal(philox(a.key, static_cast<uint64_t>(i)));
  store(y, a.dtype, i, a.mean + quant::mul_rn(a.scale, z));
}

// Bernoulli: 1 with probability p (u < p, u with 53 bits: p = 0 never, p = 1 always).
SRT_RANDOM_HD inline bool bernoulli_element(const Key& k, double p, int64_t i) {
  return unit(philox(k, static_cast<uint64_t>(i)), 0, 53) < p;
}

// Multinomial: sample `s` of a row of `classes` unnormalized log-probabilities x: the smallest
// class whose cumulative e^(x - max) exceeds u * total. A class of probability 0 (-infinity) is
// never drawn; a row without any finite probability mass gives class 0.
SRT_RANDOM_HD inline int64_t multinomial_sample(const Key& k, const void* x, DataType t, int64_t classes,
                                                int64_t row, uint64_t index) {
  const int64_t base = row * classes;
  auto load = [&](int64_t c) { return load_float(x, t, base + c); };
  double mx = -HUGE_VAL;
  for (int64_t c = 0; c < classes; ++c) mx = load(c) > mx ? load(c) : mx;
  if (!(mx - mx == 0)) return 0;  // all -inf, or +inf / NaN: no distribution
  double total = 0;
  for (int64_t c = 0; c < classes; ++c) total += exp_nonpositive(load(c) - mx);
  const double target = quant::mul_rn(unit(philox(k, index), 0, 53), total);
  double cum = 0;
  int64_t last = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const double p = exp_nonpositive(load(c) - mx);
    if (p <= 0) continue;
    cum += p;
    last = c;
    if (target < cum) return c;
  }
  return last;  // target rounded up to the total
}

}  // namespace streamrt::ops::random

namespace streamrt::ops::random {

// ---- Host side (random_util.cc; the uniform / normal arguments in their ops' files) ----

// The step's key: seeded from the `seed` attribute (a float; its bits are hashed), else this
// process's entropy and the next value of the process-wide execution counter.
Result<Key> random_key(const ir::Node& node);
// The output type of RandomUniform / RandomNormal (`fallback` float32) and their Like forms
// (`fallback` the input's type): attribute `dtype`, else `fallback`; a float type.
Result<DataType> random_dtype(const ir::Node& node, DataType fallback);
// Shape rule of RandomUniform / RandomNormal (`like` false: dims from the `shape` attribute) and
// of their Like forms (input 0's dims; its contents are never read).
Status infer_random_fill(InferContext& ctx, bool like);
// Plan load: each value of `shape` within [0, kMaxAttrExtent].
Status verify_random_shape(const InferContext& ctx);
// Kernels: the output's type (checked with its dims against the rule above), the key, and the
// two float attributes of the distribution (`a` and `b`: low / high, mean / scale) as doubles.
struct FillArgs {
  DataType dtype = DataType::kFloat32;
  Key key;
  double a = 0, b = 1;
};
struct FloatAttr {
  const char* name;
  float fallback;
};
Result<FillArgs> fill_args(const KernelContext& ctx, bool like, FloatAttr a, FloatAttr b);
Result<UniformArgs> uniform_args(const KernelContext& ctx, bool like);  // random_uniform.cc
Result<NormalArgs> normal_args(const KernelContext& ctx, bool like);    // random_normal.cc

// CPU kernel of RandomUniform(Like) / RandomNormal(Like): kArgs checks the step, kElement draws.
template <typename Args, Result<Args> (*kArgs)(const KernelContext&, bool), void (*kElement)(const Args&, void*, int64_t),
          bool kLike>
Status fill_cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(Args a, kArgs(ctx, kLike));
  void* y = ctx.output(0).data;
  for (int64_t i = 0, n = ctx.output(0).numel(); i < n; ++i) kElement(a, y, i);
  return ok_status();
}
// The schema of those four (`like`: the Like form), nondeterministic: what their files register.
OpSchema fill_schema(const char* op_type, KernelFn cpu, bool like);

// Bernoulli's output type: attribute `dtype`, else the input's (any type).
Result<DataType> bernoulli_dtype(const ir::Node& node, DataType input);

// Multinomial of one step: input [batch, classes] (float32 / float16 / bfloat16 / float64),
// output [batch, samples] of int32 or int64.
struct MultinomialArgs {
  Key key;
  int64_t batch = 0, classes = 0, samples = 0;
  DataType input = DataType::kFloat32, output = DataType::kInt32;
};
Result<MultinomialArgs> multinomial_args(const KernelContext& ctx);  // multinomial.cc

}  // namespace streamrt::ops::random
