// Pad: modes constant, reflect, edge and wrap. 'pads' (and the constant 'value') are
// attributes before opset 11 ('paddings' in opset 1) and inputs from 11 on; opset 18 adds
// 'axes'. Negative pads crop.
#include <cstring>
#include <limits>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/pad.h"

namespace streamrt::ops {
namespace {

// Per-dim (begin, end) pads for `rank` from the pads values and optional axes.
Result<std::vector<std::pair<int64_t, int64_t>>> per_dim_pads(const ir::Node& node, const std::vector<int64_t>& pads,
                                                              const std::optional<std::vector<int64_t>>& axes,
                                                              int64_t rank) {
  std::vector<int64_t> ax;
  if (axes) {
    SRT_ASSIGN_OR_RETURN(ax, normalize_axes(node, *axes, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) ax.push_back(d);
  }
  if (pads.size() != 2 * ax.size())
    return node.error(StatusCode::kInvalidModel, "pads has " + std::to_string(pads.size()) + " values, expected " +
                                                     std::to_string(2 * ax.size()));
  std::vector<std::pair<int64_t, int64_t>> out(static_cast<size_t>(rank), {0, 0});
  for (size_t i = 0; i < ax.size(); ++i) out[ax[i]] = {pads[i], pads[i + ax.size()]};
  return out;
}

Result<int64_t> padded_dim(const ir::Node& node, int64_t dim, std::pair<int64_t, int64_t> p) {
  if (dim < 0) return kDynamicDim;
  int64_t out;
  if (__builtin_add_overflow(dim, p.first, &out) || __builtin_add_overflow(out, p.second, &out))
    return node.error(StatusCode::kInvalidModel, "pads overflow a dim of " + std::to_string(dim));
  if (out < 0) return node.error(StatusCode::kInvalidModel, "pads crop a dim of " + std::to_string(dim) + " below 0");
  return out;
}

}  // namespace

Result<PadMode> read_pad_mode(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(std::string m, node.attr_string("mode", std::string("constant")));
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  return node.error(StatusCode::kUnsupported, "pad mode '" + m + "' is not supported");
}

std::string pads_attr_name(const ir::Node& node) { return node.has_attr("paddings") ? "paddings" : "pads"; }

Result<PadParams> resolve_pad(const ir::Node& node, const Dims& in_dims, const std::vector<int64_t>& pads,
                              const std::optional<std::vector<int64_t>>& axes) {
  const size_t rank = in_dims.size();
  PadParams params;
  SRT_ASSIGN_OR_RETURN(params.pads, per_dim_pads(node, pads, axes, static_cast<int64_t>(rank)));
  params.out_dims.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    SRT_ASSIGN_OR_RETURN(params.out_dims[d], padded_dim(node, in_dims[d], params.pads[d]));
  }
  return params;
}

Result<std::vector<unsigned char>> pad_attribute_fill(const ir::Node& node, DataType dt) {
  std::vector<unsigned char> bytes(dtype_size(dt), 0);
  SRT_ASSIGN_OR_RETURN(float value, node.attr_float("value", 0.f));
  SRT_RETURN_IF_ERROR(dispatch<kAll>(dt, node.describe(), [&]<typename T>() {
    T t;
    if constexpr (std::is_same_v<T, bool>) {
      t = value != 0.f;
    } else if constexpr (std::is_integral_v<T>) {
      // Clamp first: casting an out-of-range float to an integer is undefined.
      const double lo = static_cast<double>(std::numeric_limits<T>::min());
      const double hi = static_cast<double>(std::numeric_limits<T>::max());
      const double v = value;
      t = std::isnan(v) ? T(0)
          : v <= lo     ? std::numeric_limits<T>::min()
          : v >= hi     ? std::numeric_limits<T>::max()
                        : static_cast<T>(v);
    } else {
      t = store<T>(static_cast<compute_t<T>>(value));
    }
    std::memcpy(bytes.data(), &t, sizeof(T));
    return ok_status();
  }));
  return bytes;
}

namespace {

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  SRT_RETURN_IF_ERROR(read_pad_mode(ctx.node()).status());
  const DataType dt = ctx.input_dtype(0);
  if (ctx.has_input(2) && ctx.input_dtype(2) != dt)
    return ctx.error(std::string("constant_value is ") + dtype_name(ctx.input_dtype(2)) + ", data is " + dtype_name(dt));
  const TensorInfo& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const std::string pads_attr = pads_attr_name(ctx.node());
  SRT_ASSIGN_OR_RETURN(IntList pads, read_int_list(ctx, 1, pads_attr));
  SRT_ASSIGN_OR_RETURN(IntList axes, read_int_list(ctx, 3, "axes"));
  if (!pads.given) return ctx.error("missing pads");
  Dims out = x.dims;
  if (!pads.values || (axes.given && !axes.values)) {
    // Unknown pads: every padded dim is unknown (all of them when the axes are unknown).
    if (axes.values) {
      SRT_ASSIGN_OR_RETURN(auto norm, normalize_axes(ctx.node(), *axes.values, rank));
      for (int64_t a : norm) out[a] = kDynamicDim;
    } else {
      std::fill(out.begin(), out.end(), kDynamicDim);
    }
    ctx.set_output(0, dt, std::move(out));
    return ok_status();
  }
  // resolve_pad keeps dynamic dims dynamic.
  SRT_ASSIGN_OR_RETURN(PadParams params, resolve_pad(ctx.node(), x.dims, *pads.values, axes.values));
  ctx.set_output(0, dt, std::move(params.out_dims));
  return ok_status();
}

// Source index for output index `i` on a dim of length `n` with `begin` padding; -1 means
// "the constant". n > 0 for the non-constant modes (checked by the caller).
int64_t source_index(PadMode mode, int64_t i, int64_t begin, int64_t n) {
  int64_t s = i - begin;
  if (s >= 0 && s < n) return s;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return s < 0 ? 0 : n - 1;
    case PadMode::kWrap: return ((s % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      s = ((s % period) + period) % period;
      return s < n ? s : period - s;
    }
  }
  return -1;
}

// The constant as `esize` bytes of the data type: input 2, the old 'value' attribute, or 0.
Result<std::vector<unsigned char>> constant_bytes(KernelContext& ctx, DataType dt) {
  std::vector<unsigned char> bytes(dtype_size(dt), 0);
  if (ctx.has_input(2)) {
    const TensorRef& v = ctx.input(2);
    if (v.dtype != dt || v.numel() != 1) return ctx.error("constant_value must be one element of the data type");
    std::memcpy(bytes.data(), v.data, bytes.size());
    return bytes;
  }
  return pad_attribute_fill(ctx.node(), dt);
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  const size_t rank = x.dims.size();
  SRT_ASSIGN_OR_RETURN(PadMode mode, read_pad_mode(ctx.node()));
  const std::string pads_attr = pads_attr_name(ctx.node());
  SRT_ASSIGN_OR_RETURN(auto pads, int_list_input_or_attr(ctx, 1, pads_attr));
  SRT_ASSIGN_OR_RETURN(auto axes, int_list_input_or_attr(ctx, 3, "axes"));
  if (!pads) return ctx.error("missing pads");
  SRT_ASSIGN_OR_RETURN(PadParams params, resolve_pad(ctx.node(), x.dims, *pads, axes));
  const auto& p = params.pads;
  const Dims& out = params.out_dims;
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, out));
  if (y.numel() == 0) return ok_status();
  if (mode != PadMode::kConstant && x.numel() == 0) return ctx.error("cannot pad an empty input in this mode");
  SRT_ASSIGN_OR_RETURN(auto fill, constant_bytes(ctx, x.dtype));
  const size_t esize = fill.size();
  const auto in_strides = dense_strides(x.dims);
  const char* src = static_cast<const char*>(x.data);
  char* dst = static_cast<char*>(y.data);
  // Walk every output element; contiguous in-range stretches of the last dim become memcpys.
  const int64_t inner = rank ? out[rank - 1] : 1;
  const int64_t rows = y.numel() / inner;
  std::vector<int64_t> idx(rank ? rank - 1 : 0, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    bool constant_row = false;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t s = source_index(mode, idx[d], p[d].first, x.dims[d]);
      if (s < 0) constant_row = true;
      base += s * in_strides[d];
    }
    // Source index along the last dim, -1 for the constant.
    auto last_source = [&](int64_t j) -> int64_t {
      if (rank == 0) return 0;
      if (constant_row) return -1;
      return source_index(mode, j, p[rank - 1].first, x.dims[rank - 1]);
    };
    for (int64_t j = 0; j < inner;) {
      const int64_t s = last_source(j);
      if (s < 0) {
        std::memcpy(dst, fill.data(), esize);
        dst += esize;
        ++j;
        continue;
      }
      int64_t len = 1;  // extend while the source stays consecutive
      while (j + len < inner && last_source(j + len) == s + len) ++len;
      std::memcpy(dst, src + static_cast<size_t>(base + s) * esize, static_cast<size_t>(len) * esize);
      dst += static_cast<size_t>(len) * esize;
      j += len;
    }
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Pad, {.op_type = "Pad", .infer = infer, .cpu = cpu, .shape_inputs = {1, 3},
                           .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
