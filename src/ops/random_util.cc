// Host-side rules of the random ops (see random_util.h for the determinism contract).
#include "ops/random_util.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/eye_like.h"

namespace streamrt::ops::random {
namespace {

// Drawn once per process: unseeded values differ from process to process.
uint64_t process_entropy() {
  static const uint64_t entropy = [] {
    std::random_device rd;
    const uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return mix64((uint64_t{rd()} << 32 | rd()) ^ mix64(t));
  }();
  return entropy;
}

// Advances at every unseeded step execution, across contexts and engines: no two draw alike.
std::atomic<uint64_t> g_executions{0};

bool is_random_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat64;
}

}  // namespace

Result<Key> random_key(const ir::Node& node) {
  if (!node.has_attr("seed")) return Key{process_entropy(), g_executions.fetch_add(1), false};
  SRT_ASSIGN_OR_RETURN(float seed, node.attr_float("seed"));
  uint32_t bits = 0;
  std::memcpy(&bits, &seed, sizeof bits);
  return Key{mix64(bits), 0, true};
}

Result<DataType> random_dtype(const ir::Node& node, DataType fallback) {
  SRT_ASSIGN_OR_RETURN(DataType t, eye_like_dtype(node, fallback));
  if (!is_random_float(t))
    return node.error(StatusCode::kUnsupported, std::string("output type ") + dtype_name(t) +
                                                    " is not a float type (float16, float, double, bfloat16)" +
                                                    (node.has_attr("dtype") ? "" : "; set attribute 'dtype'"));
  return t;
}

Result<DataType> bernoulli_dtype(const ir::Node& node, DataType input) { return eye_like_dtype(node, input); }

namespace {

Result<Dims> shape_attr(const ir::Node& node) {
  if (!node.has_attr("shape")) return node.error(StatusCode::kInvalidModel, "attribute 'shape' is required");
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, node.attr_ints("shape"));
  for (int64_t d : shape)
    if (d < 0) return node.error(StatusCode::kInvalidModel, "attribute 'shape' has a negative dim " + std::to_string(d));
  return Dims(shape.begin(), shape.end());
}

}  // namespace

Status verify_random_shape(const InferContext& ctx) {
  return verify_attr_range(ctx.node(), "shape", 0, kMaxAttrExtent);
}

Status infer_random_fill(InferContext& ctx, bool like) {
  if (like) {
    if (!ctx.has_input(0)) return ctx.error("missing required input 0");
    SRT_ASSIGN_OR_RETURN(DataType t, random_dtype(ctx.node(), ctx.input_dtype(0)));
    ctx.set_output_like(0, t, 0);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(DataType t, random_dtype(ctx.node(), DataType::kFloat32));
  SRT_ASSIGN_OR_RETURN(Dims dims, shape_attr(ctx.node()));
  SRT_RETURN_IF_ERROR(checked_numel(dims).status());
  ctx.set_output(0, t, std::move(dims));
  return ok_status();
}

namespace {
template <bool kLike>
Status infer_fill(InferContext& ctx) {
  return infer_random_fill(ctx, kLike);
}
}  // namespace

OpSchema fill_schema(const char* op_type, KernelFn cpu, bool like) {
  return OpSchema{.op_type = op_type, .min_opset = 1, .infer = like ? infer_fill<true> : infer_fill<false>,
                  .cpu = cpu, .verify = like ? nullptr : verify_random_shape, .cpu_dtypes = dtypes(kAllFloats),
                  .dtype_input = -1, .dims_only_inputs = like ? std::vector<int>{0} : std::vector<int>{},
                  .output_dtype_attr = "dtype", .nondeterministic = true};
}

Result<FillArgs> fill_args(const KernelContext& ctx, bool like, FloatAttr a, FloatAttr b) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, like ? 1 : 0));
  FillArgs f;
  Dims dims;
  if (like) {
    SRT_ASSIGN_OR_RETURN(f.dtype, random_dtype(ctx.node(), ctx.input(0).dtype));
    dims = ctx.input(0).dims;
  } else {
    SRT_ASSIGN_OR_RETURN(f.dtype, random_dtype(ctx.node(), DataType::kFloat32));
    SRT_ASSIGN_OR_RETURN(dims, shape_attr(ctx.node()));
  }
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, f.dtype, dims));
  SRT_ASSIGN_OR_RETURN(float va, ctx.node().attr_float(a.name, a.fallback));
  SRT_ASSIGN_OR_RETURN(float vb, ctx.node().attr_float(b.name, b.fallback));
  f.a = va;
  f.b = vb;
  SRT_ASSIGN_OR_RETURN(f.key, random_key(ctx.node()));
  return f;
}

}  // namespace streamrt::ops::random
