// Helpers shared by the element-wise op files (unary math, activations, comparisons, logical,
// variadic Max/Min/Sum/Mean, Where, Clip, Cast): shape rules for same-shape and broadcast ops,
// and run-time checks that keep a kernel from reading out of bounds when the dims it gets do
// not match what inference promised (inference may have seen -1 where the kernel sees 3).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "core/parallel.h"
#include "ops/common.h"

namespace streamrt::ops {

// Elementwise kernels split a tensor among threads only from this many elements per thread up.
inline constexpr int64_t kElementsPerThread = int64_t{1} << 16;

// Output 0 = broadcast of inputs [first, first + count) with dtype `out`; unranked when any
// of them has unknown rank. Every one of those inputs must be present.
inline Status infer_broadcast_output(InferContext& ctx, size_t first, size_t count, DataType out) {
  std::vector<Dims> shapes;
  for (size_t i = first; i < first + count; ++i) {
    if (!ctx.has_input(i)) return ctx.error("missing required input " + std::to_string(i));
    if (!ctx.input(i).has_shape) {
      ctx.set_output_unranked(0, out);
      return ok_status();
    }
    shapes.push_back(ctx.input_dims(i));
  }
  auto dims = broadcast_all(shapes);
  if (!dims.ok()) return ctx.error(dims.status().message());
  ctx.set_output(0, out, *dims);
  return ok_status();
}

// Inputs i and j must have one dtype.
inline Status require_same_dtype(const InferContext& ctx, size_t i, size_t j) {
  if (ctx.input_dtype(i) != ctx.input_dtype(j))
    return ctx.error("input " + std::to_string(j) + " has data type " +
                     dtype_name(ctx.input_dtype(j)) + ", expected " + dtype_name(ctx.input_dtype(i)) +
                     " like input " + std::to_string(i));
  return ok_status();
}

// Kernel-side check that `in` broadcasts to `out` (numpy rules, right-aligned).
inline Status check_broadcasts_to(const KernelContext& ctx, const Dims& in, const Dims& out,
                                  const std::string& what) {
  bool ok = in.size() <= out.size();
  for (size_t i = 0; ok && i < in.size(); ++i) {
    int64_t d_in = in[in.size() - 1 - i];
    int64_t d_out = out[out.size() - 1 - i];
    ok = d_in == d_out || d_in == 1;
  }
  if (!ok)
    return ctx.error(what + " of shape " + dims_to_string(in) + " does not broadcast to output shape " +
                     dims_to_string(out));
  return ok_status();
}

// Kernel-side check for same-shape ops: input i and output j hold as many elements.
inline Status check_same_numel(const KernelContext& ctx, size_t in, size_t out) {
  if (ctx.input(in).numel() != ctx.output(out).numel())
    return ctx.error("input " + std::to_string(in) + " has shape " + dims_to_string(ctx.input(in).dims) +
                     " but output " + std::to_string(out) + " has shape " +
                     dims_to_string(ctx.output(out).dims));
  return ok_status();
}

// Same-shape float op: y[i] = fn(float(x[i])) for float32 / float16 / bfloat16.
template <typename Fn>
Status map_floats(KernelContext& ctx, Fn&& fn) {
  SRT_RETURN_IF_ERROR(check_same_numel(ctx, 0, 0));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* px = x.as<T>();
    T* py = y.as<T>();
    const int64_t n = x.numel();
    // Large tensors on every core (GELU's erf over a BERT layer's [tokens, 4 x hidden] is ~10 ms a core).
    run_in_shares(n, threads_for(n, kElementsPerThread), 64, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) py[i] = store<T>(fn(load(px[i])));
    });
    return ok_status();
  });
}

// Bool tensors are read as bytes: a byte other than 0 / 1 from a model file must not be
// loaded as a C++ bool (undefined behaviour); any non-zero byte counts as true.
inline const uint8_t* bool_bytes(const TensorRef& t) { return static_cast<const uint8_t*>(t.data); }

// Float to integer the way Cast does it: truncate toward zero, NaN becomes 0 and values out
// of I's range saturate at its limits (a plain static_cast would be undefined there).
template <typename I>
inline I saturate_cast(double f) {
  if (std::isnan(f)) return 0;
  // In double every bound of a 64-bit-or-narrower integer is exact enough to compare with.
  const double d = std::trunc(f);
  if (d <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (d >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

// Negation that wraps for the most negative integer (plain -x would be undefined there).
template <typename C>
inline C wrapping_neg(C x) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(x));
  else return -x;
}

}  // namespace streamrt::ops
