// TopK: the k largest (or smallest) elements of X along `axis` and their int64 indices.
//   opset 1: k is an attribute; opset 10: k is input K (int64, one element), a shape input
//   since the output dims depend on it; opset 11: negative axis, largest, sorted.
// Equal values come out lower index first; NaN sorts after every number (ops/topk.h).
// The output is always sorted (sorted = 0 leaves the order to the implementation).
#include "ops/topk.h"

#include <algorithm>
#include <numeric>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

Result<TopKParams> topk_params(const ir::Node& node, const Dims& dims, int64_t k) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0) return node.error(StatusCode::kInvalidModel, "input X must have rank >= 1, got a scalar");
  SRT_ASSIGN_OR_RETURN(int64_t axis, node.attr_int("axis", -1));
  SRT_ASSIGN_OR_RETURN(int64_t largest, node.attr_int("largest", 1));
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(node, axis, rank));
  const size_t ax = static_cast<size_t>(a);
  if (k < 0 || (dims[ax] >= 0 && k > dims[ax]))
    return node.error(StatusCode::kInvalidArgument, "k = " + std::to_string(k) + " is outside [0, " +
                                                        std::to_string(dims[ax]) + "] (the length of axis " +
                                                        std::to_string(axis) + ")");
  TopKParams p;
  p.k = k;
  p.axis = ax;
  p.largest = largest != 0;
  p.outer = dims_product_or_dynamic(dims, 0, ax);
  p.dim = dims[ax];
  p.inner = dims_product_or_dynamic(dims, ax + 1, dims.size());
  p.out_dims = dims;
  p.out_dims[ax] = k;
  return p;
}

Result<int64_t> topk_k(const ir::Node& node, const std::optional<std::vector<int64_t>>& k_input) {
  if (node.opset < 10) return node.attr_int("k");
  if (!k_input) return node.error(StatusCode::kInvalidModel, "missing required input K");
  if (k_input->size() != 1)
    return node.error(StatusCode::kInvalidArgument,
                      "K must hold one value, got " + std::to_string(k_input->size()));
  return (*k_input)[0];
}

namespace {

constexpr unsigned kTypes = kNumeric;

Status check_k_input(const InferContext& ctx) {
  if (ctx.opset() < 10) return ok_status();
  if (!ctx.has_input(1)) return ctx.error("missing required input K");
  if (ctx.input_dtype(1) != DataType::kInt64)
    return ctx.error(std::string("K must be int64, got ") + dtype_name(ctx.input_dtype(1)));
  return ok_status();
}

// k when known at build time: the attribute, or K's single element when propagated.
Result<std::optional<int64_t>> known_k(const InferContext& ctx) {
  if (ctx.opset() < 10) {
    SRT_ASSIGN_OR_RETURN(int64_t k, ctx.node().attr_int("k"));
    return std::optional<int64_t>(k);
  }
  auto partial = ctx.input_partial(1);
  if (!partial || partial->empty()) return std::optional<int64_t>();
  if (partial->size() != 1) return ctx.error("K must hold one value, got " + std::to_string(partial->size()));
  return (*partial)[0];
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kTypes));
  SRT_RETURN_IF_ERROR(check_k_input(ctx));
  SRT_ASSIGN_OR_RETURN(std::optional<int64_t> k, known_k(ctx));
  const DataType t = ctx.input_dtype(0);
  if (!ctx.input(0).has_shape) {
    ctx.set_output_unranked(0, t);
    ctx.set_output_unranked(1, DataType::kInt64);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(TopKParams p, topk_params(ctx.node(), ctx.input_dims(0), k.value_or(0)));
  if (!k) p.out_dims[p.axis] = kDynamicDim;
  ctx.set_output(0, t, p.out_dims);
  ctx.set_output(1, DataType::kInt64, p.out_dims);
  return ok_status();
}

// Plan load: axis within X's rank, and an attribute k that keeps output sizes sane.
Status verify(const InferContext& ctx) {
  SRT_RETURN_IF_ERROR(verify_axis_attr(ctx, "axis", -1));
  return verify_attr_range(ctx.node(), "k", 0, kMaxAttrExtent);
}

template <typename T>
void topk_rows(const T* x, T* values, int64_t* indices, const TopKParams& p) {
  using C = compute_t<T>;
  std::vector<int64_t> order(static_cast<size_t>(p.dim));
  std::vector<C> row(static_cast<size_t>(p.dim));
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t j = 0; j < p.inner; ++j) {
      const int64_t base = o * p.dim * p.inner + j;
      for (int64_t i = 0; i < p.dim; ++i) row[i] = load(x[base + i * p.inner]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + p.k, order.end(), [&](int64_t a, int64_t b) {
        return topk_before(row[a], a, row[b], b, p.largest);
      });
      const int64_t out_base = o * p.k * p.inner + j;
      for (int64_t r = 0; r < p.k; ++r) {
        values[out_base + r * p.inner] = store<T>(row[order[r]]);
        if (indices) indices[out_base + r * p.inner] = order[r];
      }
    }
  }
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  std::optional<std::vector<int64_t>> k_input;
  if (ctx.opset() >= 10 && ctx.has_input(1)) {
    if (ctx.input(1).dtype != DataType::kInt64) return ctx.error("K must be int64");
    k_input = read_int_values(ctx.input(1));
  }
  SRT_ASSIGN_OR_RETURN(int64_t k, topk_k(ctx.node(), k_input));
  SRT_ASSIGN_OR_RETURN(TopKParams p, topk_params(ctx.node(), x.dims, k));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, p.out_dims));
  int64_t* indices = nullptr;
  if (ctx.has_output(1)) {
    SRT_RETURN_IF_ERROR(check_output(ctx, 1, DataType::kInt64, p.out_dims));
    indices = ctx.output(1).as<int64_t>();
  }
  if (dims_numel(p.out_dims) == 0) return ok_status();
  return dispatch<kTypes>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    topk_rows<T>(x.as<T>(), ctx.output(0).as<T>(), indices, p);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(TopK, {.op_type = "TopK", .min_opset = 1, .infer = infer, .cpu = cpu, .verify = verify,
                            .shape_inputs = {1}, .cpu_dtypes = dtypes(kTypes)});

}  // namespace streamrt::ops
