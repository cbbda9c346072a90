#include "ops/common.h"

namespace streamrt::ops {

Result<Dims> broadcast_dims(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db) out[i] = da;
    else if (da == 1) out[i] = db;
    else if (db == 1) out[i] = da;
    else if (da < 0) out[i] = db;  // dynamic vs fixed: must equal the fixed one at run time
    else if (db < 0) out[i] = da;
    else
      return invalid_model("shapes " + dims_to_string(a) + " and " + dims_to_string(b) +
                           " do not broadcast");
  }
  return out;
}

Result<Dims> broadcast_all(const std::vector<Dims>& shapes) {
  Dims out;
  for (const auto& s : shapes) {
    SRT_ASSIGN_OR_RETURN(out, broadcast_dims(out, s));
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Dims& in, const Dims& out) {
  const size_t rank = out.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t s = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    size_t d_in = in.size() - 1 - i;
    size_t d_out = rank - 1 - i;
    strides[d_out] = in[d_in] == 1 && out[d_out] != 1 ? 0 : s;
    s *= in[d_in];
  }
  return strides;
}

Result<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    return node.error(StatusCode::kInvalidModel, "axis " + std::to_string(axis) +
                                                     " is out of range for rank " + std::to_string(rank));
  return a;
}

Result<int64_t> normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank) {
  return normalize_axis(ctx.node(), axis, rank);
}

std::vector<int64_t> read_int_values(const TensorRef& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype) {
      case DataType::kInt64: v[i] = t.as<int64_t>()[i]; break;
      case DataType::kInt32: v[i] = t.as<int32_t>()[i]; break;
      case DataType::kInt16: v[i] = t.as<int16_t>()[i]; break;
      case DataType::kInt8: v[i] = t.as<int8_t>()[i]; break;
      case DataType::kUInt8: v[i] = t.as<uint8_t>()[i]; break;
      case DataType::kUInt16: v[i] = t.as<uint16_t>()[i]; break;
      case DataType::kUInt32: v[i] = t.as<uint32_t>()[i]; break;
      // Above INT64_MAX wraps negative: callers range-check the values they read.
      case DataType::kUInt64: v[i] = static_cast<int64_t>(t.as<uint64_t>()[i]); break;
      default: v[i] = 0; break;
    }
  }
  return v;
}

Result<std::optional<std::vector<int64_t>>> int_list_input_or_attr(const InferContext& ctx,
                                                                   size_t input_index,
                                                                   const std::string& attr) {
  if (ctx.has_input(input_index)) {
    const Tensor* v = ctx.input_value(input_index);
    if (!v) return ctx.error("input " + std::to_string(input_index) + " must be known at build time");
    SRT_ASSIGN_OR_RETURN(auto vals, v->to_int64_vector());
    return std::optional<std::vector<int64_t>>(std::move(vals));
  }
  if (ctx.node().has_attr(attr)) {
    SRT_ASSIGN_OR_RETURN(auto vals, ctx.node().attr_ints(attr));
    return std::optional<std::vector<int64_t>>(std::move(vals));
  }
  return std::optional<std::vector<int64_t>>();
}

Result<std::optional<std::vector<int64_t>>> int_list_input_or_attr(const KernelContext& ctx,
                                                                   size_t input_index,
                                                                   const std::string& attr) {
  if (ctx.has_input(input_index))
    return std::optional<std::vector<int64_t>>(read_int_values(ctx.input(input_index)));
  if (ctx.node().has_attr(attr)) {
    SRT_ASSIGN_OR_RETURN(auto vals, ctx.node().attr_ints(attr));
    return std::optional<std::vector<int64_t>>(std::move(vals));
  }
  return std::optional<std::vector<int64_t>>();
}

Status require_input(const InferContext& ctx, size_t i, unsigned allowed) {
  if (!ctx.has_input(i)) return ctx.error("missing required input " + std::to_string(i));
  DataType t = ctx.input_dtype(i);
  const bool ok = (dtype_set_of(t) & allowed) != 0;
  if (!ok)
    return ctx.unsupported("input " + std::to_string(i) + " has unsupported data type " + dtype_name(t));
  return ok_status();
}

}  // namespace streamrt::ops
