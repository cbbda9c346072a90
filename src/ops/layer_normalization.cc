// LayerNormalization (opset 17): Y = (X - mean) / sqrt(var + epsilon) * Scale + B, statistics over
// the axes [axis, rank). Optional outputs Mean and InvStdDev have X's shape with those axes set
// to 1 and the type named by stash_type. Scale and B broadcast (numpy) to X, as in the op's
// function body. Statistics are computed in double whatever the input type.
#include <cmath>

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/elementwise_util.h"
#include "ops/layer_normalization.h"

namespace streamrt::ops {

bool layer_norm_broadcasts_to(const Dims& s, const Dims& x) {
  if (s.size() > x.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t ds = s[s.size() - 1 - i];
    const int64_t dx = x[x.size() - 1 - i];
    if (ds != 1 && ds != dx && ds >= 0 && dx >= 0) return false;
  }
  return true;
}

Result<LayerNormGeometry> layer_norm_geometry(const ir::Node& node, const Dims& x_dims) {
  LayerNormGeometry g;
  SRT_ASSIGN_OR_RETURN(int64_t axis_attr, node.attr_int("axis", -1));
  SRT_ASSIGN_OR_RETURN(g.axis, normalize_axis(node, axis_attr, static_cast<int64_t>(x_dims.size())));
  SRT_ASSIGN_OR_RETURN(g.epsilon, node.attr_float("epsilon", 1e-5f));
  for (size_t d = 0; d < x_dims.size(); ++d) (static_cast<int64_t>(d) < g.axis ? g.rows : g.cols) *= x_dims[d];
  return g;
}

namespace {

// Type of Mean / InvStdDev from the stash_type attribute (an ONNX TensorProto data type).
Result<DataType> stash_dtype(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t stash, node.attr_int("stash_type", 1));
  switch (stash) {
    case 1: return DataType::kFloat32;
    case 10: return DataType::kFloat16;
    case 16: return DataType::kBFloat16;
    default:
      return node.error(StatusCode::kUnsupported,
                        "stash_type " + std::to_string(stash) + " is not supported (float32, float16, bfloat16)");
  }
}

Status check_param(const InferContext& ctx, size_t i, const char* name) {
  if (ctx.input_dtype(i) != ctx.input_dtype(0))
    return ctx.error(std::string(name) + " has type " + dtype_name(ctx.input_dtype(i)) + ", X has " +
                     dtype_name(ctx.input_dtype(0)));
  if (ctx.input(0).has_shape && ctx.input(i).has_shape &&
      !layer_norm_broadcasts_to(ctx.input_dims(i), ctx.input_dims(0)))
    return ctx.error(std::string(name) + " of shape " + dims_to_string(ctx.input_dims(i)) +
                     " does not broadcast to X of shape " + dims_to_string(ctx.input_dims(0)));
  return ok_status();
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  if (!ctx.has_input(1)) return ctx.error("missing required input 1 (Scale)");
  SRT_RETURN_IF_ERROR(check_param(ctx, 1, "Scale"));
  if (ctx.has_input(2)) SRT_RETURN_IF_ERROR(check_param(ctx, 2, "B"));
  SRT_ASSIGN_OR_RETURN(DataType stats_type, stash_dtype(ctx.node()));
  SRT_ASSIGN_OR_RETURN(float epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  (void)epsilon;  // read here so a wrongly typed attribute fails at build time
  const DataType t = ctx.input_dtype(0);
  ctx.set_output_like(0, t, 0);
  if (!ctx.input(0).has_shape) {
    for (size_t i = 1; i < ctx.num_outputs() && i < 3; ++i) ctx.set_output_unranked(i, stats_type);
    return ok_status();
  }
  Dims stats = ctx.input_dims(0);
  SRT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.node().attr_int("axis", -1));
  SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, axis_attr, static_cast<int64_t>(stats.size())));
  for (size_t d = static_cast<size_t>(axis); d < stats.size(); ++d) stats[d] = 1;
  for (size_t i = 1; i < ctx.num_outputs() && i < 3; ++i) ctx.set_output(i, stats_type, stats);
  return ok_status();
}

void store_stat(const TensorRef& t, int64_t i, double v) {
  switch (t.dtype) {
    case DataType::kFloat32: t.as<float>()[i] = static_cast<float>(v); break;
    case DataType::kFloat16: t.as<Half>()[i] = Half(static_cast<float>(v)); break;
    case DataType::kBFloat16: t.as<BFloat16>()[i] = BFloat16(static_cast<float>(v)); break;
    default: break;
  }
}

// Rows [r0, r1): mean and 1 / stddev in double (two passes: no cancellation when |mean| >> stddev).
template <typename T>
void row_stats(const KernelContext& ctx, const T* px, int64_t cols, float epsilon, int64_t r0, int64_t r1,
               double* mean, double* inv_std) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* row = px + r * cols;
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += load(row[c]);
    const double m = sum / static_cast<double>(cols);
    double sq = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double d = load(row[c]) - m;
      sq += d * d;
    }
    mean[r] = m;
    inv_std[r] = 1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon);
    if (ctx.has_output(1)) store_stat(ctx.output(1), r, m);
    if (ctx.has_output(2)) store_stat(ctx.output(2), r, inv_std[r]);
  }
}

template <typename T>
Status run_typed(KernelContext& ctx, int64_t rows, int64_t cols, float epsilon) {
  const TensorRef& x = ctx.input(0);
  const TensorRef& scale = ctx.input(1);
  const bool has_bias = ctx.has_input(2);
  const TensorRef& y = ctx.output(0);
  const T* px = x.as<T>();
  const T* ps = scale.as<T>();
  const T* pb = has_bias ? ctx.input(2).as<T>() : nullptr;
  T* py = y.as<T>();
  std::vector<double> mean(static_cast<size_t>(rows)), inv_std(static_cast<size_t>(rows));
  // Scale and bias of the normalized dims alone (the usual case): rows on every core, each
  // element's offset into them its column. The same arithmetic as the general path below.
  if (scale.numel() == cols && (!has_bias || ctx.input(2).numel() == cols)) {
    run_in_shares(rows, threads_for(rows * cols, kElementsPerThread), 1, [&](int64_t r0, int64_t r1) {
      row_stats(ctx, px, cols, epsilon, r0, r1, mean.data(), inv_std.data());
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          double v = (load(px[r * cols + c]) - mean[r]) * inv_std[r] * load(ps[c]);
          if (pb) v += load(pb[c]);
          py[r * cols + c] = store<T>(static_cast<compute_t<T>>(v));
        }
    });
    return ok_status();
  }
  row_stats(ctx, px, cols, epsilon, 0, rows, mean.data(), inv_std.data());
  const Dims bias_dims = has_bias ? ctx.input(2).dims : Dims{};
  for_each_broadcast<2>(x.dims, {scale.dims, bias_dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    const int64_t r = i / cols;
    double v = (load(px[i]) - mean[r]) * inv_std[r] * load(ps[o[0]]);
    if (pb) v += load(pb[o[1]]);
    py[i] = store<T>(static_cast<compute_t<T>>(v));
  });
  return ok_status();
}

// Plan load: axis within the input's rank (the kernel splits dims there).
Status verify(const InferContext& ctx) { return verify_axis_attr(ctx, "axis", -1); }

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  SRT_RETURN_IF_ERROR(check_layer_norm_params(ctx));
  SRT_ASSIGN_OR_RETURN(LayerNormGeometry g, layer_norm_geometry(ctx.node(), x.dims));
  const int64_t rows = g.rows, cols = g.cols;
  const float epsilon = g.epsilon;
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_output(i) && ctx.output(i).numel() != rows)
      return ctx.error("output " + std::to_string(i) + " holds " + std::to_string(ctx.output(i).numel()) +
                       " values, expected " + std::to_string(rows));
  if (x.numel() == 0 && rows > 0 && cols == 0) {
    // Nothing to normalize: statistics of an empty set are NaN.
    for (size_t i = 1; i < 3; ++i)
      if (ctx.has_output(i))
        for (int64_t r = 0; r < rows; ++r) store_stat(ctx.output(i), r, std::nan(""));
    return ok_status();
  }
  return dispatch<kFloats>(x.dtype, ctx.node().describe(),
                           [&]<typename T>() { return run_typed<T>(ctx, rows, cols, epsilon); });
}

}  // namespace

STREAMRT_REGISTER_OP(LayerNormalization,
                     {.op_type = "LayerNormalization", .min_opset = 17, .infer = infer, .cpu = cpu, .verify = verify,
                                                               .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
