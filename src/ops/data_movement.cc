#include "ops/data_movement.h"

#include <cstring>
#include <set>

namespace streamrt::ops {

std::vector<int64_t> dense_strides(const Dims& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

namespace {

// Copies with a fixed-size element type so the compiler emits plain loads and stores.
template <typename E>
void strided_copy_typed(E* dst, const E* src, const Dims& dims, const std::vector<int64_t>& strides,
                        int64_t offset) {
  const size_t rank = dims.size();
  const int64_t inner = rank ? dims[rank - 1] : 1;
  const int64_t inner_stride = rank ? strides[rank - 1] : 0;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= dims[d];
  std::vector<int64_t> idx(rank ? rank - 1 : 0, 0);
  int64_t off = offset;
  for (int64_t r = 0; r < rows; ++r) {
    const E* s = src + off;
    if (inner_stride == 1) {
      std::memcpy(dst, s, static_cast<size_t>(inner) * sizeof(E));
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i] = s[i * inner_stride];
    }
    dst += inner;
    // Advance the odometer over the outer dims.
    for (size_t d = idx.size(); d-- > 0;) {
      off += strides[d];
      if (++idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

StridedView merge_strided_view(const Dims& out_dims, const std::vector<int64_t>& src_strides) {
  StridedView v;
  for (size_t d = 0; d < out_dims.size(); ++d) {
    if (out_dims[d] == 1) continue;
    if (!v.dims.empty() && v.strides.back() == src_strides[d] * out_dims[d]) {
      v.dims.back() *= out_dims[d];
      v.strides.back() = src_strides[d];
      continue;
    }
    v.dims.push_back(out_dims[d]);
    v.strides.push_back(src_strides[d]);
  }
  return v;
}

void strided_copy(void* dst, const void* src, size_t elem_size, const Dims& out_dims,
                  const std::vector<int64_t>& src_strides, int64_t src_offset) {
  for (int64_t d : out_dims)
    if (d == 0) return;
  StridedView merged = merge_strided_view(out_dims, src_strides);
  Dims& dims = merged.dims;
  std::vector<int64_t>& strides = merged.strides;
  switch (elem_size) {
    case 1: strided_copy_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), dims, strides, src_offset); return;
    case 2: strided_copy_typed(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), dims, strides, src_offset); return;
    case 4: strided_copy_typed(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), dims, strides, src_offset); return;
    case 8: strided_copy_typed(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), dims, strides, src_offset); return;
    default: break;
  }
  // Other sizes: treat each element as elem_size bytes (an extra innermost dim).
  dims.push_back(static_cast<int64_t>(elem_size));
  for (auto& s : strides) s *= static_cast<int64_t>(elem_size);
  strides.push_back(1);
  strided_copy_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), dims, strides,
                     src_offset * static_cast<int64_t>(elem_size));
}

int64_t dims_product(const Dims& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

int64_t dims_product_or_dynamic(const Dims& dims, size_t begin, size_t end) {
  int64_t p = 1;
  bool dynamic = false;
  for (size_t i = begin; i < end && i < dims.size(); ++i) {
    if (dims[i] == 0) return 0;
    if (dims[i] < 0 || __builtin_mul_overflow(p, dims[i], &p)) dynamic = true;
  }
  return dynamic ? kDynamicDim : p;
}

std::optional<int64_t> merge_dim(int64_t a, int64_t b) {
  if (a < 0) return b;
  if (b < 0 || a == b) return a;
  return std::nullopt;
}

Result<std::vector<int64_t>> known_int_values(const InferContext& ctx, size_t input,
                                              const char* what) {
  const Tensor* v = ctx.input_value(input);
  if (!v) return ctx.error(std::string(what) + " is not known at build time");
  auto vals = v->to_int64_vector();
  if (!vals.ok()) return ctx.error(std::string(what) + ": " + vals.status().message());
  return std::move(vals).value();
}

Result<IntList> read_int_list(const InferContext& ctx, size_t input, const std::string& attr) {
  IntList list;
  if (ctx.has_input(input)) {
    list.given = true;
    if (ctx.input_value(input)) {
      SRT_ASSIGN_OR_RETURN(auto v, known_int_values(ctx, input, attr.c_str()));
      list.values = std::move(v);
    }
  } else if (ctx.node().has_attr(attr)) {
    list.given = true;
    SRT_ASSIGN_OR_RETURN(auto v, ctx.node().attr_ints(attr));
    list.values = std::move(v);
  }
  return list;
}

int64_t static_length_1d(const InferContext& ctx, size_t input) {
  const TensorInfo& t = ctx.input(input);
  if (!t.has_shape) return kDynamicDim;
  if (t.dims.empty()) return 1;  // a scalar counts as one value
  if (t.dims.size() != 1) return kDynamicDim;
  return t.dims[0];
}

Result<std::vector<int64_t>> normalize_axes(const ir::Node& node, const std::vector<int64_t>& axes,
                                            int64_t rank) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank)
      return node.error(StatusCode::kInvalidModel, "axis " + std::to_string(a) +
                                                       " is out of range for rank " +
                                                       std::to_string(rank));
    if (!seen.insert(n).second)
      return node.error(StatusCode::kInvalidModel, "axis " + std::to_string(a) + " is repeated");
    out.push_back(n);
  }
  return out;
}

Status require_bound(const KernelContext& ctx, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is not bound");
  if (!ctx.has_output(0)) return ctx.error("output 0 is not bound");
  return ok_status();
}

Status check_output(const KernelContext& ctx, size_t i, DataType dtype, const Dims& dims) {
  const TensorRef& y = ctx.output(i);
  if (y.dtype != dtype || y.dims != dims)
    return ctx.error("output " + std::to_string(i) + " is " + dtype_name(y.dtype) + " " + dims_to_string(y.dims) +
                     ", expected " + dtype_name(dtype) + " " + dims_to_string(dims));
  return ok_status();
}

Status copy_bytes_cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  if (x.dtype != y.dtype || x.numel() != y.numel())
    return ctx.error("cannot copy " + dims_to_string(x.dims) + " into " + dims_to_string(y.dims));
  // The same buffer (the memory plan made the output a view of the input) needs no copy.
  if (x.nbytes() && x.data != y.data) std::memcpy(y.data, x.data, x.nbytes());
  return ok_status();
}

}  // namespace streamrt::ops
