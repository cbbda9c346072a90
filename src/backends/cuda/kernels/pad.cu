// Pad on CUDA (modes constant, reflect, edge, wrap; negative pads crop): one thread per output
// element maps each coordinate to its source as src/ops/pad.cc's source_index does. pads and
// axes come from the host copies of inputs 1 and 3 (shape inputs of Pad) or the attributes of
// older opsets; the constant is input 2 read on the device, or the 'value' attribute converted
// on the host to the data type exactly as the CPU kernel converts it.
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

enum PadMode : int { kConstant = 0, kReflect, kEdge, kWrap };

constexpr int kMaxPadDims = 8;

Result<PadMode> read_mode(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(std::string m, node.attr_string("mode", std::string("constant")));
  if (m == "constant") return kConstant;
  if (m == "reflect") return kReflect;
  if (m == "edge") return kEdge;
  if (m == "wrap") return kWrap;
  return node.error(StatusCode::kUnsupported, "pad mode '" + m + "' is not supported");
}

// Per-dim (begin, end) pads for `rank` from the pads values and optional axes (as pad.cc).
Result<std::vector<std::pair<int64_t, int64_t>>> per_dim_pads(const ir::Node& node, const std::vector<int64_t>& pads,
                                                              const std::optional<std::vector<int64_t>>& axes,
                                                              int64_t rank) {
  std::vector<int64_t> ax;
  if (axes) {
    SRT_ASSIGN_OR_RETURN(ax, ops::normalize_axes(node, *axes, rank));
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
  int64_t out;
  if (__builtin_add_overflow(dim, p.first, &out) || __builtin_add_overflow(out, p.second, &out))
    return node.error(StatusCode::kInvalidModel, "pads overflow a dim of " + std::to_string(dim));
  if (out < 0) return node.error(StatusCode::kInvalidModel, "pads crop a dim of " + std::to_string(dim) + " below 0");
  return out;
}

// Source index for output index `i` on a dim of length `n` with `begin` padding; -1 means
// "the constant". n > 0 for the non-constant modes (checked on the host). As pad.cc.
__device__ __forceinline__ int64_t source_index(int mode, int64_t i, int64_t begin, int64_t n) {
  int64_t s = i - begin;
  if (s >= 0 && s < n) return s;
  switch (mode) {
    case kConstant: return -1;
    case kEdge: return s < 0 ? 0 : n - 1;
    case kWrap: return ((s % n) + n) % n;
    case kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      s = ((s % period) + period) % period;
      return s < n ? s : period - s;
    }
    default: return -1;
  }
}

struct PadView {
  int rank = 0;
  int mode = kConstant;
  int64_t out_dims[kMaxPadDims] = {};
  int64_t in_dims[kMaxPadDims] = {};
  int64_t in_strides[kMaxPadDims] = {};
  int64_t begin[kMaxPadDims] = {};
};

// `fill_ptr` (input 2 on the device) wins over `fill` (the converted attribute) when given.
template <typename E>
__global__ void pad_kernel(E* __restrict__ dst, const E* __restrict__ src, PadView v, E fill, const E* fill_ptr,
                           int64_t n) {
  const E value = fill_ptr ? *fill_ptr : fill;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i;
    int64_t off = 0;
    bool constant = false;
    for (int d = v.rank - 1; d >= 0; --d) {
      const int64_t c = rem % v.out_dims[d];
      rem /= v.out_dims[d];
      const int64_t s = source_index(v.mode, c, v.begin[d], v.in_dims[d]);
      if (s < 0) constant = true;
      else off += s * v.in_strides[d];
    }
    dst[i] = constant ? value : src[off];
  }
}

// The 'value' attribute (default 0) as the data type's bytes, converted as pad.cc does.
Result<uint64_t> attribute_fill_bits(const CudaKernelContext& ctx, DataType dt) {
  SRT_ASSIGN_OR_RETURN(float value, ctx.node().attr_float("value", 0.f));
  uint64_t bits = 0;
  SRT_RETURN_IF_ERROR(ops::dispatch<ops::kAll>(dt, ctx.node().describe(), [&]<typename T>() {
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
      t = ops::store<T>(static_cast<ops::compute_t<T>>(value));
    }
    static_assert(sizeof(T) <= sizeof(bits));
    std::memcpy(&bits, &t, sizeof(T));  // little-endian: the low bytes hold the element
    return ok_status();
  }));
  return bits;
}

Status pad_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  const size_t rank = x.dims.size();
  SRT_ASSIGN_OR_RETURN(PadMode mode, read_mode(ctx.node()));
  const std::string pads_attr = ctx.node().has_attr("paddings") ? "paddings" : "pads";
  SRT_ASSIGN_OR_RETURN(auto pads, host_int_list(ctx, 1, pads_attr));
  SRT_ASSIGN_OR_RETURN(auto axes, host_int_list(ctx, 3, "axes"));
  if (!pads) return ctx.error("missing pads");
  SRT_ASSIGN_OR_RETURN(auto p, per_dim_pads(ctx.node(), *pads, axes, static_cast<int64_t>(rank)));
  Dims out(rank);
  for (size_t d = 0; d < rank; ++d) {
    SRT_ASSIGN_OR_RETURN(out[d], padded_dim(ctx.node(), x.dims[d], p[d]));
  }
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, out));
  if (y.numel() == 0) return ok_status();
  if (mode != kConstant && x.numel() == 0) return ctx.error("cannot pad an empty input in this mode");
  if (rank > static_cast<size_t>(kMaxPadDims))
    return ctx.unsupported("Pad of a rank-" + std::to_string(rank) + " tensor (at most " +
                           std::to_string(kMaxPadDims) + " dims on CUDA)");
  const void* fill_ptr = nullptr;
  uint64_t fill_bits = 0;
  if (ctx.has_input(2)) {
    const ops::TensorRef& v = ctx.input(2);
    if (v.dtype != x.dtype || v.numel() != 1) return ctx.error("constant_value must be one element of the data type");
    fill_ptr = v.data;
  } else {
    SRT_ASSIGN_OR_RETURN(fill_bits, attribute_fill_bits(ctx, x.dtype));
  }
  PadView v;
  v.rank = static_cast<int>(rank);
  v.mode = mode;
  const auto in_strides = ops::dense_strides(x.dims);
  for (size_t d = 0; d < rank; ++d) {
    v.out_dims[d] = out[d];
    v.in_dims[d] = x.dims[d];
    v.in_strides[d] = in_strides[d];
    v.begin[d] = p[d].first;
  }
  const int64_t n = y.numel();
  return by_width(dtype_size(x.dtype), [&]<typename E>() {
    if constexpr (sizeof(E) > sizeof(uint64_t)) {
      return internal_error("pad: no 16-byte data types");
    } else {
      E fill;
      std::memcpy(&fill, &fill_bits, sizeof(E));
      pad_kernel<E><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<E>(), x.as<const E>(), v, fill,
                                                           static_cast<const E*>(fill_ptr), n);
      SRT_CUDA_LAUNCH("pad_kernel");
      return ok_status();
    }
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Pad, "Pad", pad_cuda);

}  // namespace streamrt::cuda
