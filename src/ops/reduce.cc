// Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp.
//   axes: an attribute before opset 13 (ReduceSum) / 18 (the others), an optional int64 input
//         after; absent or empty means "all axes", or "no axis" with noop_with_empty_axes = 1
//         (then each element is reduced on its own: SumSquare squares, L1 takes |x|, ...).
//   keepdims (default 1) keeps reduced axes as 1.
// Floats (float64 too) accumulate in double, integers in int64 / uint64 with wrap-around
// (never UB on overflow).
// Empty reductions give the identity: 0 for sums, 1 for Prod, the lowest / highest value for
// Max / Min, -inf for LogSum / LogSumExp, NaN for a float Mean.
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/reduce.h"

namespace streamrt::ops {
namespace {

// Integer inputs only where the result stays an integer computation (ONNX also allows no
// others: its reductions take int32 / int64 / uint32 / uint64, Max / Min also 8-bit ones).
constexpr ReduceInfo kReduceInfos[] = {
    {"ReduceSum", Reduce::kSum, kAllFloats | kInts},
    {"ReduceMean", Reduce::kMean, kAllFloats | kInts},
    {"ReduceMax", Reduce::kMax, kNumeric},
    {"ReduceMin", Reduce::kMin, kNumeric},
    {"ReduceProd", Reduce::kProd, kAllFloats | kInts},
    {"ReduceL1", Reduce::kL1, kAllFloats | kInts},
    {"ReduceL2", Reduce::kL2, kAllFloats},
    {"ReduceSumSquare", Reduce::kSumSquare, kAllFloats | kInts},
    {"ReduceLogSum", Reduce::kLogSum, kAllFloats},
    {"ReduceLogSumExp", Reduce::kLogSumExp, kAllFloats},
};

}  // namespace

const ReduceInfo* reduce_info(const std::string& op_type) {
  for (const auto& r : kReduceInfos)
    if (op_type == r.op_type) return &r;
  return nullptr;
}

bool reduce_dtype_in(DataType t, unsigned set) { return (dtype_set_of(t) & set) != 0; }

Result<ReduceAttrs> reduce_attrs(const ir::Node& node) {
  ReduceAttrs a;
  SRT_ASSIGN_OR_RETURN(int64_t keep, node.attr_int("keepdims", 1));
  SRT_ASSIGN_OR_RETURN(int64_t noop, node.attr_int("noop_with_empty_axes", 0));
  a.keepdims = keep != 0;
  a.noop_with_empty_axes = noop != 0;
  return a;
}

Result<std::vector<bool>> reduced_mask(const ir::Node& node, const std::optional<std::vector<int64_t>>& axes,
                                       int64_t rank, bool noop) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  if (!axes || axes->empty()) {
    if (!noop) mask.assign(mask.size(), true);
    return mask;
  }
  for (int64_t axis : *axes) {
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
      return node.error(StatusCode::kInvalidModel, "axis " + std::to_string(axis) +
                                                       " is out of range for rank " + std::to_string(rank));
    if (mask[a]) return node.error(StatusCode::kInvalidModel, "axis " + std::to_string(axis) + " is repeated");
    mask[a] = true;
  }
  return mask;
}

namespace {

const ReduceInfo& info_of(const std::string& op_type) {
  const ReduceInfo* r = reduce_info(op_type);
  return r ? *r : kReduceInfos[0];  // unreachable fallback: only registered names reach here
}

Dims reduced_dims(const Dims& in, const std::vector<bool>& mask, bool keepdims) {
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!mask[d]) out.push_back(in[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

// The axes input exists but its contents are unknown: keep what the rank tells.
Status infer_unknown_axes(InferContext& ctx, const ReduceAttrs& a) {
  const DataType t = ctx.input_dtype(0);
  const TensorInfo& axes = ctx.input(1);
  const int64_t count = axes.has_shape && axes.dims.size() == 1 ? axes.dims[0] : -1;  // -1: unknown
  if (!ctx.input(0).has_shape) {
    if (count == 0 && !a.noop_with_empty_axes && !a.keepdims) ctx.set_output(0, t, {});
    else ctx.set_output_unranked(0, t);
    return ok_status();
  }
  const Dims& in = ctx.input_dims(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  if (count == 0) {
    std::vector<bool> mask(in.size(), !a.noop_with_empty_axes);
    ctx.set_output(0, t, reduced_dims(in, mask, a.keepdims));
  } else if (a.keepdims) {
    Dims out(in.size());
    for (size_t d = 0; d < in.size(); ++d) out[d] = in[d] == 1 ? 1 : kDynamicDim;  // kept or reduced to 1
    ctx.set_output(0, t, out);
  } else if (count > 0) {
    if (count > rank)
      return ctx.error(std::to_string(count) + " axes for an input of rank " + std::to_string(rank));
    ctx.set_output(0, t, Dims(static_cast<size_t>(rank - count), kDynamicDim));
  } else {
    ctx.set_output_unranked(0, t);
  }
  return ok_status();
}

Status infer(InferContext& ctx) {
  const ReduceInfo& info = info_of(ctx.node().op_type);
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, info.types));
  SRT_ASSIGN_OR_RETURN(ReduceAttrs a, reduce_attrs(ctx.node()));
  const DataType t = ctx.input_dtype(0);
  if (ctx.has_input(1)) {
    if (!is_integer(ctx.input_dtype(1)))
      return ctx.error(std::string("axes must be int64, got ") + dtype_name(ctx.input_dtype(1)));
    if (ctx.input(1).has_shape && ctx.input_dims(1).size() > 1)
      return ctx.error("axes must be 1-D, got shape " + dims_to_string(ctx.input_dims(1)));
    if (!ctx.input_value(1)) return infer_unknown_axes(ctx, a);
  }
  SRT_ASSIGN_OR_RETURN(auto axes, int_list_input_or_attr(ctx, 1, "axes"));
  if (!ctx.input(0).has_shape) {
    const bool all = (!axes || axes->empty()) && !a.noop_with_empty_axes;
    if (all && !a.keepdims) ctx.set_output(0, t, {});
    else ctx.set_output_unranked(0, t);
    return ok_status();
  }
  const Dims& in = ctx.input_dims(0);
  SRT_ASSIGN_OR_RETURN(auto mask, reduced_mask(ctx.node(), axes, static_cast<int64_t>(in.size()),
                                               a.noop_with_empty_axes));
  ctx.set_output(0, t, reduced_dims(in, mask, a.keepdims));
  return ok_status();
}

// --- kernel ------------------------------------------------------------------------------

// double for every float type (float64 included), uint64_t for unsigned integers (so that
// Max / Min compare uint64 values above INT64_MAX correctly), int64_t for signed ones.
template <typename T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double,
                                 std::conditional_t<std::is_unsigned_v<T>, uint64_t, int64_t>>;

// Integer arithmetic wraps (two's complement) instead of overflowing.
inline int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) + uint64_t(b)); }
inline int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) * uint64_t(b)); }
inline int64_t wrap_abs(int64_t a) { return a < 0 ? static_cast<int64_t>(0 - uint64_t(a)) : a; }
inline uint64_t wrap_add(uint64_t a, uint64_t b) { return a + b; }
inline uint64_t wrap_mul(uint64_t a, uint64_t b) { return a * b; }
inline uint64_t wrap_abs(uint64_t a) { return a; }
inline double wrap_add(double a, double b) { return a + b; }
inline double wrap_mul(double a, double b) { return a * b; }
inline double wrap_abs(double a) { return std::abs(a); }

template <Reduce R, typename T>
acc_t<T> init_value() {
  return reduce_identity<R, acc_t<T>, T>();
}

template <Reduce R, typename A>
A step(A acc, A v) {
  switch (R) {
    case Reduce::kProd: return wrap_mul(acc, v);
    case Reduce::kMax: return (v > acc || v != v) && acc == acc ? v : acc;  // NaN wins
    case Reduce::kMin: return (v < acc || v != v) && acc == acc ? v : acc;
    case Reduce::kL1: return wrap_add(acc, wrap_abs(v));
    case Reduce::kL2:
    case Reduce::kSumSquare: return wrap_add(acc, wrap_mul(v, v));
    default: return wrap_add(acc, v);  // Sum, Mean, LogSum (LogSumExp is handled apart)
  }
}

template <Reduce R, typename A>
A finish(A acc, int64_t count, double shift) {
  if constexpr (std::is_floating_point_v<A>) {
    switch (R) {
      case Reduce::kMean: return count > 0 ? acc / static_cast<double>(count) : std::nan("");
      case Reduce::kL2: return std::sqrt(acc);
      case Reduce::kLogSum: return std::log(acc);
      case Reduce::kLogSumExp: return std::log(acc) + shift;
      default: return acc;
    }
  } else {
    if (R == Reduce::kMean) return count > 0 ? acc / count : 0;
    return acc;
  }
}

template <Reduce R, typename T>
void reduce_run(const TensorRef& x, const Dims& keep, int64_t count, const TensorRef& y) {
  using A = acc_t<T>;
  const T* px = x.as<T>();
  T* py = y.as<T>();
  const int64_t n_out = y.numel();
  std::vector<A> acc(static_cast<size_t>(n_out), init_value<R, T>());
  std::vector<double> shift(R == Reduce::kLogSumExp ? n_out : 0, 0.0);
  if constexpr (R == Reduce::kLogSumExp) {
    // exp(x - max) never overflows; an infinite max is not subtracted (inf - inf = NaN).
    std::vector<double> mx(static_cast<size_t>(n_out), -std::numeric_limits<double>::infinity());
    for_each_broadcast<1>(x.dims, {keep}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      mx[o[0]] = std::max(mx[o[0]], static_cast<double>(load(px[i])));
    });
    for (int64_t o = 0; o < n_out; ++o) shift[o] = std::isfinite(mx[o]) ? mx[o] : 0.0;
    for_each_broadcast<1>(x.dims, {keep}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      acc[o[0]] += std::exp(static_cast<double>(load(px[i])) - shift[o[0]]);
    });
  } else {
    for_each_broadcast<1>(x.dims, {keep}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      acc[o[0]] = step<R, A>(acc[o[0]], static_cast<A>(load(px[i])));
    });
  }
  for (int64_t o = 0; o < n_out; ++o) {
    A v = finish<R, A>(acc[o], count, shift.empty() ? 0.0 : shift[o]);
    if constexpr (std::is_floating_point_v<A>) py[o] = store<T>(static_cast<compute_t<T>>(v));
    else py[o] = static_cast<T>(v);
  }
}

template <typename T>
void reduce_typed(Reduce op, const TensorRef& x, const Dims& keep, int64_t count, const TensorRef& y) {
  switch (op) {
    case Reduce::kSum: return reduce_run<Reduce::kSum, T>(x, keep, count, y);
    case Reduce::kMean: return reduce_run<Reduce::kMean, T>(x, keep, count, y);
    case Reduce::kMax: return reduce_run<Reduce::kMax, T>(x, keep, count, y);
    case Reduce::kMin: return reduce_run<Reduce::kMin, T>(x, keep, count, y);
    case Reduce::kProd: return reduce_run<Reduce::kProd, T>(x, keep, count, y);
    case Reduce::kL1: return reduce_run<Reduce::kL1, T>(x, keep, count, y);
    case Reduce::kL2: return reduce_run<Reduce::kL2, T>(x, keep, count, y);
    case Reduce::kSumSquare: return reduce_run<Reduce::kSumSquare, T>(x, keep, count, y);
    case Reduce::kLogSum: return reduce_run<Reduce::kLogSum, T>(x, keep, count, y);
    case Reduce::kLogSumExp: return reduce_run<Reduce::kLogSumExp, T>(x, keep, count, y);
  }
}

Status cpu(KernelContext& ctx) {
  const ReduceInfo& info = info_of(ctx.node().op_type);
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  if (!reduce_dtype_in(x.dtype, info.types))
    return ctx.unsupported(std::string("data type ") + dtype_name(x.dtype) + " is not supported");
  SRT_ASSIGN_OR_RETURN(ReduceAttrs a, reduce_attrs(ctx.node()));
  SRT_ASSIGN_OR_RETURN(auto axes, int_list_input_or_attr(ctx, 1, "axes"));
  SRT_ASSIGN_OR_RETURN(auto mask, reduced_mask(ctx.node(), axes, static_cast<int64_t>(x.dims.size()),
                                               a.noop_with_empty_axes));
  const Dims keep = reduced_dims(x.dims, mask, true);
  if (dims_numel(keep) != y.numel())
    return ctx.error("output shape " + dims_to_string(y.dims) + " does not match the reduction of " +
                     dims_to_string(x.dims));
  int64_t count = 1;  // elements per output
  for (size_t d = 0; d < x.dims.size(); ++d)
    if (mask[d]) count *= x.dims[d];
  return dispatch<kNumeric>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    reduce_typed<T>(info.op, x, keep, count, y);
    return ok_status();
  });
}

}  // namespace

// The CPU kernel's types are kReduceInfos' (above).
#define SRT_REDUCE(Name)                                                                     \
  STREAMRT_REGISTER_OP(Name, {.op_type = #Name, .infer = infer, .cpu = cpu, .shape_inputs = {1}, \
                              .cpu_dtypes = dtypes(reduce_info(#Name)->types)})

SRT_REDUCE(ReduceSum);
SRT_REDUCE(ReduceMean);
SRT_REDUCE(ReduceMax);
SRT_REDUCE(ReduceMin);
SRT_REDUCE(ReduceProd);
SRT_REDUCE(ReduceL1);
SRT_REDUCE(ReduceL2);
SRT_REDUCE(ReduceSumSquare);
SRT_REDUCE(ReduceLogSum);
SRT_REDUCE(ReduceLogSumExp);

#undef SRT_REDUCE

}  // namespace streamrt::ops
