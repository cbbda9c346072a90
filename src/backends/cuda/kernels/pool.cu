// MaxPool (with the optional Indices output and storage_order) and AveragePool
// (count_include_pad) on CUDA: one thread per output element walking its window in the CPU
// kernel's order (src/ops/pool.cc), with ops/window.h's geometry (auto_pad, ceil_mode, pads).
#include <limits>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/window.h"

namespace streamrt::cuda {
namespace {

constexpr int kMaxPoolRank = 6;

struct PoolArgs {
  int rank = 0;
  int64_t in[kMaxPoolRank] = {}, out[kMaxPoolRank] = {}, kernel[kMaxPoolRank] = {};
  int64_t strides[kMaxPoolRank] = {}, dilations[kMaxPoolRank] = {};
  int64_t pad_begin[kMaxPoolRank] = {}, pad_end[kMaxPoolRank] = {};
  int64_t planes = 0, in_size = 0, out_size = 0, taps = 0;  // taps = prod(kernel)
};

// Window start per axis of output element `yi` (row-major within a plane).
__device__ __forceinline__ void window_origin(const PoolArgs& p, int64_t yi, int64_t* origin) {
  for (int d = p.rank - 1; d >= 0; --d) {
    origin[d] = (yi % p.out[d]) * p.strides[d] - p.pad_begin[d];
    yi /= p.out[d];
  }
}

// Offset within the plane of tap `t` (row-major over the kernel, last axis fastest: the
// CPU's visiting order), or -1 when the tap falls outside X.
__device__ __forceinline__ int64_t tap_offset(const PoolArgs& p, const int64_t* origin, int64_t t) {
  int64_t off = 0, scale = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t ip = origin[d] + (t % p.kernel[d]) * p.dilations[d];
    t /= p.kernel[d];
    if (ip < 0 || ip >= p.in[d]) return -1;
    off += ip * scale;
    scale *= p.in[d];
  }
  return off;
}

// Row-major spatial offset -> column-major (storage_order = 1).
__device__ __forceinline__ int64_t to_column_major(const PoolArgs& p, int64_t off) {
  int64_t col = 0, scale = 1, c[kMaxPoolRank];
  for (int d = p.rank - 1; d >= 0; --d) {
    c[d] = off % p.in[d];
    off /= p.in[d];
  }
  for (int d = 0; d < p.rank; ++d) {
    col += c[d] * scale;
    scale *= p.in[d];
  }
  return col;
}

template <typename T>
__global__ void max_pool_kernel(const T* x, T* y, int64_t* idx, PoolArgs p, bool column_major) {
  using C = acc_t<T>;
  const int64_t total = p.planes * p.out_size;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = i / p.out_size;
    const T* xp = x + plane * p.in_size;
    int64_t origin[kMaxPoolRank];
    window_origin(p, i % p.out_size, origin);
    C best = std::numeric_limits<C>::lowest();
    int64_t arg = -1;
    for (int64_t t = 0; t < p.taps; ++t) {
      const int64_t off = tap_offset(p, origin, t);
      if (off < 0) continue;
      const C v = to_acc(xp[off]);
      if (arg < 0 || v > best) best = v, arg = off;  // first maximum wins, as the CPU
    }
    y[i] = from_acc<T>(best);
    if (idx) idx[i] = plane * p.in_size + (arg < 0 ? 0 : column_major ? to_column_major(p, arg) : arg);
  }
}

template <typename T>
__global__ void average_pool_kernel(const T* x, T* y, PoolArgs p, bool count_include_pad) {
  const int64_t total = p.planes * p.out_size;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const T* xp = x + (i / p.out_size) * p.in_size;
    int64_t origin[kMaxPoolRank];
    window_origin(p, i % p.out_size, origin);
    float sum = 0.f;
    int64_t n = 0;
    for (int64_t t = 0; t < p.taps; ++t) {
      const int64_t off = tap_offset(p, origin, t);
      if (off < 0) continue;
      sum += static_cast<float>(to_acc(xp[off]));
      ++n;
    }
    int64_t div = n;
    if (count_include_pad) {
      // Taps inside the padded extent [-pad_begin, in + pad_end), counted per axis.
      div = 1;
      for (int d = 0; d < p.rank; ++d) {
        int64_t c = 0;
        for (int64_t k = 0; k < p.kernel[d]; ++k) {
          const int64_t ip = origin[d] + k * p.dilations[d];
          c += ip >= -p.pad_begin[d] && ip < p.in[d] + p.pad_end[d];
        }
        div *= c;
      }
    }
    y[i] = from_acc<T>(div > 0 ? sum / static_cast<float>(div) : 0.f);
  }
}

Status pool_cuda(CudaKernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (!node.has_attr("kernel_shape")) return ctx.error("missing attribute kernel_shape");
  SRT_ASSIGN_OR_RETURN(auto ks, node.attr_ints("kernel_shape"));
  if (ks.empty()) return ctx.error("kernel_shape is empty");
  SRT_ASSIGN_OR_RETURN(ops::Window w, ops::read_window(node, ks.size()));
  const size_t r = w.rank();
  if (x.dims.size() != r + 2)
    return ctx.error("X has shape " + dims_to_string(x.dims) + " but kernel_shape has " + std::to_string(r) +
                     " values");
  if (r > kMaxPoolRank) return ctx.unsupported(std::to_string(r) + "-D pooling");
  std::vector<int64_t> pads;
  const Dims in(x.dims.begin() + 2, x.dims.end());
  SRT_ASSIGN_OR_RETURN(Dims out, ops::window_output(node, w, in, &pads));
  Dims yd = {x.dims[0], x.dims[1]};
  yd.insert(yd.end(), out.begin(), out.end());
  if (y.dims != yd)
    return ctx.error("output has shape " + dims_to_string(y.dims) + ", expected " + dims_to_string(yd));
  PoolArgs p;
  p.rank = static_cast<int>(r);
  p.taps = 1;
  for (size_t d = 0; d < r; ++d) {
    p.in[d] = in[d], p.out[d] = out[d], p.kernel[d] = w.kernel[d];
    p.strides[d] = w.strides[d], p.dilations[d] = w.dilations[d];
    p.pad_begin[d] = pads[d], p.pad_end[d] = pads[r + d];
    p.taps *= w.kernel[d];
  }
  p.planes = x.dims[0] * x.dims[1];
  p.in_size = dims_numel(in);
  p.out_size = dims_numel(out);
  const int64_t total = y.numel();
  if (node.op_type == "MaxPool") {
    SRT_ASSIGN_OR_RETURN(int64_t order, node.attr_int("storage_order", 0));
    int64_t* idx = ctx.has_output(1) ? ctx.output(1).as<int64_t>() : nullptr;
    if (idx && (ctx.output(1).dtype != DataType::kInt64 || ctx.output(1).dims != yd))
      return ctx.error("Indices output must be int64 of shape " + dims_to_string(yd));
    return cuda_dispatch<ops::kNumeric>(x.dtype, node.describe(), [&]<typename T>() -> Status {
      if (total == 0) return ok_status();
      max_pool_kernel<T><<<grid_for(total), 256, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), idx, p, order == 1);
      SRT_CUDA_LAUNCH("max_pool_kernel");
      return ok_status();
    });
  }
  SRT_ASSIGN_OR_RETURN(int64_t include_pad, node.attr_int("count_include_pad", 0));
  return cuda_dispatch<ops::kFloats>(x.dtype, node.describe(), [&]<typename T>() -> Status {
    if (total == 0) return ok_status();
    average_pool_kernel<T><<<grid_for(total), 256, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), p, include_pad != 0);
    SRT_CUDA_LAUNCH("average_pool_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(MaxPool, "MaxPool", pool_cuda);
STREAMRT_REGISTER_CUDA_KERNEL(AveragePool, "AveragePool", pool_cuda);

}  // namespace streamrt::cuda
