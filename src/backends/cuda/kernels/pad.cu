// Pad on CUDA (modes constant, reflect, edge, wrap; negative pads crop): one thread per output
// element maps each coordinate to its source as src/ops/pad.cc's source_index does. pads and
// axes come from the host copies of inputs 1 and 3 (shape inputs of Pad) or the attributes of
// older opsets and are resolved by ops::resolve_pad (src/ops/pad.h, the CPU kernel's code); the
// constant is input 2 read on the device, or the 'value' attribute converted on the host by
// ops::pad_attribute_fill, as on the CPU.
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"
#include "ops/pad.h"

namespace streamrt::cuda {
namespace {

// The mode as a plain int on the device; the values are ops::PadMode's.
enum PadModeCode : int {
  kConstant = static_cast<int>(ops::PadMode::kConstant),
  kReflect = static_cast<int>(ops::PadMode::kReflect),
  kEdge = static_cast<int>(ops::PadMode::kEdge),
  kWrap = static_cast<int>(ops::PadMode::kWrap),
};

constexpr int kMaxPadDims = 8;

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

// The 'value' attribute (default 0) as the data type's bytes, converted by the CPU kernel's own
// ops::pad_attribute_fill, in the low bytes of a uint64_t (little-endian).
Result<uint64_t> attribute_fill_bits(const CudaKernelContext& ctx, DataType dt) {
  SRT_ASSIGN_OR_RETURN(auto bytes, ops::pad_attribute_fill(ctx.node(), dt));
  uint64_t bits = 0;
  if (bytes.size() > sizeof(bits)) return internal_error("pad: no 16-byte data types");
  std::memcpy(&bits, bytes.data(), bytes.size());
  return bits;
}

Status pad_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  const size_t rank = x.dims.size();
  SRT_ASSIGN_OR_RETURN(ops::PadMode pad_mode, ops::read_pad_mode(ctx.node()));
  const int mode = static_cast<int>(pad_mode);
  const std::string pads_attr = ops::pads_attr_name(ctx.node());
  SRT_ASSIGN_OR_RETURN(auto pads, host_int_list(ctx, 1, pads_attr));
  SRT_ASSIGN_OR_RETURN(auto axes, host_int_list(ctx, 3, "axes"));
  if (!pads) return ctx.error("missing pads");
  SRT_ASSIGN_OR_RETURN(ops::PadParams params, ops::resolve_pad(ctx.node(), x.dims, *pads, axes));
  const auto& p = params.pads;
  const Dims& out = params.out_dims;
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

STREAMRT_REGISTER_CUDA_KERNEL(Pad, "Pad", pad_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
