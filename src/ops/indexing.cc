#include "ops/indexing.h"

#include <cmath>
#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

bool dims_may_match(const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!merge_dim(a[d], b[d])) return false;
  return true;
}

Status check_indices(const ir::Node& node, StatusCode code, const std::vector<int64_t>& idx, int64_t dim) {
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i] < -dim || idx[i] >= dim)
      return node.error(code, "index " + std::to_string(idx[i]) + " (at position " + std::to_string(i) +
                                  ") is out of range for an axis of length " + std::to_string(dim));
  return ok_status();
}

Status check_element_dims(const ir::Node& node, StatusCode code, const Dims& data, const Dims& indices, int64_t axis) {
  if (data.empty()) return node.error(code, "data must have rank >= 1");
  if (indices.size() != data.size())
    return node.error(code, "indices " + dims_to_string(indices) + " must have the rank of data " +
                                dims_to_string(data));
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && data[d] >= 0 && indices[d] > data[d])
      return node.error(code, "indices " + dims_to_string(indices) + " exceed data " + dims_to_string(data) +
                                  " on axis " + std::to_string(d));
  return ok_status();
}

Result<int64_t> element_axis(const ir::Node& node, size_t rank) {
  SRT_ASSIGN_OR_RETURN(int64_t axis, node.attr_int("axis", 0));
  return normalize_axis(node, axis, static_cast<int64_t>(rank));
}

Status infer_element_dims(const InferContext& ctx) {
  const TensorInfo& data = ctx.input(0);
  const TensorInfo& idx = ctx.input(1);
  if (!data.has_shape || !idx.has_shape) return ok_status();
  SRT_ASSIGN_OR_RETURN(int64_t a, element_axis(ctx.node(), data.dims.size()));
  return check_element_dims(ctx.node(), StatusCode::kInvalidModel, data.dims, idx.dims, a);
}

Result<std::vector<int64_t>> element_offsets(const KernelContext& ctx, const Dims& data, const TensorRef& indices,
                                             int64_t axis) {
  if (!is_index_type(indices.dtype)) return ctx.error("indices must be int32 or int64");
  SRT_RETURN_IF_ERROR(check_element_dims(ctx.node(), StatusCode::kInvalidArgument, data, indices.dims, axis));
  const size_t ax = static_cast<size_t>(axis);
  const int64_t dim = data[ax];
  std::vector<int64_t> idx = read_int_values(indices);
  SRT_RETURN_IF_ERROR(check_indices(ctx.node(), StatusCode::kInvalidArgument, idx, dim));
  const auto strides = dense_strides(data);
  const Dims& id = indices.dims;
  const size_t rank = data.size();
  // An odometer over indices' multi-index; `base` is its offset in data without the axis term.
  std::vector<int64_t> pos(rank, 0);
  int64_t base = 0;
  for (int64_t& v : idx) {
    v = base + (v < 0 ? v + dim : v) * strides[ax];
    for (size_t d = rank; d-- > 0;) {
      if (d != ax) base += strides[d];
      if (++pos[d] < id[d]) break;
      if (d != ax) base -= strides[d] * id[d];
      pos[d] = 0;
    }
  }
  return idx;
}

Result<int64_t> check_nd_dims(const ir::Node& node, StatusCode code, const Dims& data, const Dims& indices,
                              int64_t batch_dims) {
  const int64_t r = static_cast<int64_t>(data.size());
  const int64_t q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1)
    return node.error(code, "data " + dims_to_string(data) + " and indices " + dims_to_string(indices) +
                                " must have rank >= 1");
  if (batch_dims < 0 || batch_dims >= std::min(r, q))
    return node.error(code, "batch_dims " + std::to_string(batch_dims) + " must be in [0, " +
                                std::to_string(std::min(r, q)) + ")");
  for (int64_t d = 0; d < batch_dims; ++d)
    if (data[d] >= 0 && indices[d] >= 0 && data[d] != indices[d])
      return node.error(code, "batch dim " + std::to_string(d) + " differs: data " + dims_to_string(data) +
                                  ", indices " + dims_to_string(indices));
  const int64_t k = indices.back();
  if (k > r - batch_dims)
    return node.error(code, "the last dim of indices " + dims_to_string(indices) + " exceeds the rank of data " +
                                dims_to_string(data) + " less batch_dims " + std::to_string(batch_dims));
  return k < 0 ? -1 : k;
}

Dims nd_result_dims(const Dims& data, const Dims& indices, int64_t k, int64_t batch_dims) {
  Dims out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + batch_dims + k, data.end());
  return out;
}

Result<NdSlices> nd_slice_offsets(const KernelContext& ctx, const Dims& data, const TensorRef& indices,
                                  int64_t batch_dims) {
  if (!is_index_type(indices.dtype)) return ctx.error("indices must be int32 or int64");
  SRT_ASSIGN_OR_RETURN(int64_t k,
                       check_nd_dims(ctx.node(), StatusCode::kInvalidArgument, data, indices.dims, batch_dims));
  const size_t b = static_cast<size_t>(batch_dims);
  const size_t q = indices.dims.size();
  const auto strides = dense_strides(data);
  const int64_t batch_stride = dims_product(data, b, data.size());
  const int64_t per_batch = dims_product(indices.dims, b, q - 1);
  const std::vector<int64_t> idx = read_int_values(indices);
  NdSlices s;
  s.slice = dims_product(data, b + static_cast<size_t>(k), data.size());
  s.offsets.resize(static_cast<size_t>(dims_product(indices.dims, 0, q - 1)));
  for (size_t t = 0; t < s.offsets.size(); ++t) {
    int64_t off = (static_cast<int64_t>(t) / per_batch) * batch_stride;
    for (size_t j = 0; j < static_cast<size_t>(k); ++j) {
      const int64_t v = idx[t * static_cast<size_t>(k) + j];
      const int64_t dim = data[b + j];
      if (v < -dim || v >= dim)
        return ctx.error("index " + std::to_string(v) + " (at position " + std::to_string(t * k + j) +
                         ") is out of range for data axis " + std::to_string(b + j) + " of length " +
                         std::to_string(dim));
      off += (v < 0 ? v + dim : v) * strides[b + j];
    }
    s.offsets[t] = off;
  }
  return s;
}

Result<ScatterReduction> scatter_reduction(const ir::Node& node) {
  if (node.op_type == "Scatter" && node.has_attr("reduction"))
    return node.error(StatusCode::kInvalidModel, "Scatter has no attribute 'reduction' (ScatterElements has)");
  SRT_ASSIGN_OR_RETURN(std::string s, node.attr_string("reduction", "none"));
  if (s == "none") return ScatterReduction::kNone;
  const bool add_mul = s == "add" || s == "mul";
  const bool max_min = s == "max" || s == "min";
  if (!add_mul && !max_min) return node.error(StatusCode::kInvalidModel, "unknown reduction '" + s + "'");
  const int since = add_mul ? 16 : 18;
  if (node.opset < since)
    return node.error(StatusCode::kInvalidModel, "reduction '" + s + "' needs opset " + std::to_string(since) +
                                                     ", the model has " + std::to_string(node.opset));
  if (s == "add") return ScatterReduction::kAdd;
  if (s == "mul") return ScatterReduction::kMul;
  return s == "max" ? ScatterReduction::kMax : ScatterReduction::kMin;
}

Status check_scatter_inputs(const InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) return ctx.error("needs data, indices and updates");
  if (!is_index_type(ctx.input_dtype(1)))
    return ctx.error(std::string("indices must be int32 or int64, got ") + dtype_name(ctx.input_dtype(1)));
  if (ctx.input_dtype(2) != ctx.input_dtype(0))
    return ctx.error(std::string("updates are ") + dtype_name(ctx.input_dtype(2)) + ", data is " +
                     dtype_name(ctx.input_dtype(0)));
  SRT_RETURN_IF_ERROR(scatter_reduction(ctx.node()).status());
  return ok_status();
}

namespace {

// reduce(a, b) in T: integers wrap (through uint64, no signed overflow), bools combine as
// or (add, max) / and (mul, min), floats compute in float and NaN wins max / min.
template <typename T>
T combine(ScatterReduction r, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return (r == ScatterReduction::kAdd || r == ScatterReduction::kMax) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<T>) {
    switch (r) {
      case ScatterReduction::kAdd: return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      case ScatterReduction::kMul: return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      case ScatterReduction::kMax: return a > b ? a : b;
      case ScatterReduction::kMin: return a < b ? a : b;
      default: return b;
    }
  } else {
    const float x = load(a), y = load(b);
    switch (r) {
      case ScatterReduction::kAdd: return store<T>(x + y);
      case ScatterReduction::kMul: return store<T>(x * y);
      case ScatterReduction::kMax: return std::isnan(x) || x > y ? a : b;
      case ScatterReduction::kMin: return std::isnan(x) || x < y ? a : b;
      default: return b;
    }
  }
}

}  // namespace

Status scatter_into(const KernelContext& ctx, ScatterReduction r, const TensorRef& out, const TensorRef& updates,
                    const std::vector<int64_t>& offsets, int64_t slice) {
  if (updates.dtype != out.dtype)
    return ctx.error(std::string("updates are ") + dtype_name(updates.dtype) + ", data is " + dtype_name(out.dtype));
  if (updates.numel() != static_cast<int64_t>(offsets.size()) * slice)
    return ctx.error("updates " + dims_to_string(updates.dims) + " do not match the indices");
  if (r == ScatterReduction::kNone) {
    const size_t bytes = static_cast<size_t>(slice) * dtype_size(out.dtype);
    const size_t es = dtype_size(out.dtype);
    for (size_t k = 0; k < offsets.size(); ++k)
      std::memcpy(static_cast<char*>(out.data) + static_cast<size_t>(offsets[k]) * es,
                  static_cast<const char*>(updates.data) + k * bytes, bytes);
    return ok_status();
  }
  return dispatch<kAll>(out.dtype, ctx.node().describe(), [&]<typename T>() {
    T* y = out.as<T>();
    const T* u = updates.as<const T>();
    for (size_t k = 0; k < offsets.size(); ++k)
      for (int64_t i = 0; i < slice; ++i)
        y[offsets[k] + i] = combine<T>(r, y[offsets[k] + i], u[static_cast<int64_t>(k) * slice + i]);
    return ok_status();
  });
}

}  // namespace streamrt::ops
