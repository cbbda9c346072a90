// MaxPool (with the optional Indices output and storage_order) and AveragePool
// (count_include_pad) on CUDA: one thread per output element walking its window in the CPU
// kernel's order (src/ops/pool.cc), with ops/window.h's geometry (auto_pad, ceil_mode, pads).
// 2-D pooling (CNNs' MaxPool) has its own kernels with the two window loops written out and
// 32-bit indices where they fit; other ranks walk the window with generic N-d index math.
#include <algorithm>
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

// ---- 2-D: the same semantics, the window loops specialised.

template <typename Idx>
struct Pool2d {
  Idx ih = 0, iw = 0, oh = 0, ow = 0, kh = 0, kw = 0, sh = 0, sw = 0, dh = 0, dw = 0;
  Idx ph = 0, pw = 0, peh = 0, pew = 0;  // pads at the beginning and the end
  Idx total = 0;                         // planes * oh * ow
};

// Calls f(offset within the plane) for each tap of the window starting at (y0, x0) that lies
// inside X, rows first: the CPU's order.
template <typename Idx, typename F>
__device__ __forceinline__ void for_each_tap2d(const Pool2d<Idx>& p, Idx y0, Idx x0, F&& f) {
  for (Idx ky = 0; ky < p.kh; ++ky) {
    const Idx iy = y0 + ky * p.dh;
    if (iy < 0 || iy >= p.ih) continue;
    for (Idx kx = 0; kx < p.kw; ++kx) {
      const Idx ix = x0 + kx * p.dw;
      if (ix >= 0 && ix < p.iw) f(iy * p.iw + ix);
    }
  }
}

template <typename T, typename Idx>
__global__ void max_pool2d_kernel(const T* x, T* y, int64_t* idx, Pool2d<Idx> p, bool column_major) {
  using C = acc_t<T>;
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < p.total; i += Idx(gridDim.x) * blockDim.x) {
    const Idx ox = i % p.ow, rest = i / p.ow, oy = rest % p.oh, plane = rest / p.oh;
    const int64_t in_size = int64_t(p.ih) * p.iw;
    const T* xp = x + plane * in_size;
    const Idx y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    C best = std::numeric_limits<C>::lowest();
    Idx arg = -1;
    for_each_tap2d(p, y0, x0, [&](Idx off) {
      const C v = to_acc(xp[off]);
      if (arg < 0 || v > best) best = v, arg = off;  // first maximum wins, as the CPU
    });
    y[i] = from_acc<T>(best);
    if (idx) {
      const int64_t a = arg < 0 ? 0 : column_major ? int64_t(arg % p.iw) * p.ih + arg / p.iw : int64_t(arg);
      idx[i] = plane * in_size + a;
    }
  }
}

template <typename T, typename Idx>
__global__ void average_pool2d_kernel(const T* x, T* y, Pool2d<Idx> p, bool count_include_pad) {
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < p.total; i += Idx(gridDim.x) * blockDim.x) {
    const Idx ox = i % p.ow, rest = i / p.ow, oy = rest % p.oh, plane = rest / p.oh;
    const T* xp = x + plane * (int64_t(p.ih) * p.iw);
    const Idx y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    float sum = 0.f;
    Idx n = 0;
    for_each_tap2d(p, y0, x0, [&](Idx off) {
      sum += static_cast<float>(to_acc(xp[off]));
      ++n;
    });
    Idx div = n;
    if (count_include_pad) {
      // Taps inside the padded extent [-pad_begin, in + pad_end), counted per axis.
      Idx cy = 0, cx = 0;
      for (Idx ky = 0; ky < p.kh; ++ky) {
        const Idx iy = y0 + ky * p.dh;
        cy += iy >= -p.ph && iy < p.ih + p.peh;
      }
      for (Idx kx = 0; kx < p.kw; ++kx) {
        const Idx ix = x0 + kx * p.dw;
        cx += ix >= -p.pw && ix < p.iw + p.pew;
      }
      div = cy * cx;
    }
    y[i] = from_acc<T>(div > 0 ? sum / static_cast<float>(div) : 0.f);
  }
}

template <typename Idx>
Pool2d<Idx> pool2d_args(const PoolArgs& a) {
  Pool2d<Idx> p;
  p.ih = Idx(a.in[0]), p.iw = Idx(a.in[1]), p.oh = Idx(a.out[0]), p.ow = Idx(a.out[1]);
  p.kh = Idx(a.kernel[0]), p.kw = Idx(a.kernel[1]), p.sh = Idx(a.strides[0]), p.sw = Idx(a.strides[1]);
  p.dh = Idx(a.dilations[0]), p.dw = Idx(a.dilations[1]);
  p.ph = Idx(a.pad_begin[0]), p.pw = Idx(a.pad_begin[1]), p.peh = Idx(a.pad_end[0]), p.pew = Idx(a.pad_end[1]);
  p.total = Idx(a.planes * a.out_size);
  return p;
}

// 32-bit indices when every index (and a grid stride past the end) stays below 2^31.
bool fits_int32(const PoolArgs& a) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  int64_t extent = 0;  // the largest coordinate a window reaches, padded
  for (int d = 0; d < 2; ++d)
    extent = std::max(extent, a.in[d] + a.pad_begin[d] + a.pad_end[d] + a.out[d] * a.strides[d] +
                                  a.kernel[d] * a.dilations[d]);
  return a.planes * a.out_size < kLimit && a.in_size < kLimit && extent < kLimit;
}

template <typename T, typename Idx>
Status launch_pool2d(CudaKernelContext& ctx, const PoolArgs& a, int64_t* idx, bool flag) {
  const Pool2d<Idx> p = pool2d_args<Idx>(a);
  const T* x = ctx.input(0).as<const T>();
  T* y = ctx.output(0).as<T>();
  if (ctx.node().op_type == "MaxPool") {
    max_pool2d_kernel<T, Idx><<<grid_for(p.total), 256, 0, ctx.stream()>>>(x, y, idx, p, flag);
    SRT_CUDA_LAUNCH("max_pool2d_kernel");
  } else {
    average_pool2d_kernel<T, Idx><<<grid_for(p.total), 256, 0, ctx.stream()>>>(x, y, p, flag);
    SRT_CUDA_LAUNCH("average_pool2d_kernel");
  }
  return ok_status();
}

// `flag`: MaxPool's column-major indices, AveragePool's count_include_pad.
template <typename T>
Status pool2d(CudaKernelContext& ctx, const PoolArgs& a, int64_t* idx, bool flag) {
  return fits_int32(a) ? launch_pool2d<T, int32_t>(ctx, a, idx, flag) : launch_pool2d<T, int64_t>(ctx, a, idx, flag);
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
      if (p.rank == 2) return pool2d<T>(ctx, p, idx, order == 1);
      max_pool_kernel<T><<<grid_for(total), 256, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), idx, p, order == 1);
      SRT_CUDA_LAUNCH("max_pool_kernel");
      return ok_status();
    });
  }
  SRT_ASSIGN_OR_RETURN(int64_t include_pad, node.attr_int("count_include_pad", 0));
  return cuda_dispatch<ops::kFloats>(x.dtype, node.describe(), [&]<typename T>() -> Status {
    if (total == 0) return ok_status();
    if (p.rank == 2) return pool2d<T>(ctx, p, nullptr, include_pad != 0);
    average_pool_kernel<T><<<grid_for(total), 256, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), p, include_pad != 0);
    SRT_CUDA_LAUNCH("average_pool_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(MaxPool, "MaxPool", pool_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(AveragePool, "AveragePool", pool_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
