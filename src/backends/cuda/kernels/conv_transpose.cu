// ConvTranspose on CUDA, mirroring src/ops/conv_transpose.cc (geometry from
// ops/conv_transpose.h): a direct gather kernel, one thread per output element, summing in float
// over its group's input channels and the kernel taps that reach it: tap t reaches output o from
// input i = (o + pad_begin - t * dilation) / stride when that divides exactly and lies in X.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/conv_transpose.h"

namespace streamrt::cuda {
namespace {

constexpr int kMaxSpatial = 6;

struct Args {
  int rank = 0;
  int64_t in[kMaxSpatial] = {}, out[kMaxSpatial] = {}, kernel[kMaxSpatial] = {};
  int64_t strides[kMaxSpatial] = {}, dilations[kMaxSpatial] = {}, pad_begin[kMaxSpatial] = {};
  int64_t channels = 0, maps = 0, group = 1, in_size = 0, out_size = 0, taps = 0, total = 0;
};

template <typename T>
__global__ void conv_transpose_kernel(const T* x, const T* w, const T* b, T* y, Args p) {
  const int64_t cg = p.channels / p.group, mg = p.maps / p.group;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t nm = i / p.out_size, m = nm % p.maps, n = nm / p.maps;
    int64_t o[kMaxSpatial];
    for (int64_t d = p.rank - 1, rem = i % p.out_size; d >= 0; --d) {
      o[d] = rem % p.out[d] + p.pad_begin[d];
      rem /= p.out[d];
    }
    const int64_t g = m / mg;
    const T* xn = x + (n * p.channels + g * cg) * p.in_size;
    const T* wm = w + (g * cg * mg + m % mg) * p.taps;  // W[c, m % mg, t] = wm[(c - g * cg) * mg * taps + t]
    float acc = 0.f;
    for (int64_t t = 0; t < p.taps; ++t) {
      int64_t off = 0, rem = t, scale = 1;
      bool hit = true;
      for (int d = p.rank - 1; d >= 0 && hit; --d) {
        const int64_t num = o[d] - (rem % p.kernel[d]) * p.dilations[d];
        rem /= p.kernel[d];
        const int64_t ip = num >= 0 ? num / p.strides[d] : -1;
        hit = ip >= 0 && ip * p.strides[d] == num && ip < p.in[d];
        off += ip * scale;
        scale *= p.in[d];
      }
      if (!hit) continue;
      for (int64_t c = 0; c < cg; ++c) acc += to_acc(xn[c * p.in_size + off]) * to_acc(wm[c * mg * p.taps + t]);
    }
    if (b) acc += to_acc(b[m]);
    y[i] = from_acc<T>(acc);
  }
}

Status conv_transpose_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& w = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  const bool has_b = ctx.has_input(2);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != x.dtype) return ctx.error("input types differ");
  SRT_ASSIGN_OR_RETURN(ops::ConvTransposeGeom g,
                       ops::conv_transpose_geom(ctx.node(), x.dims, w.dims, has_b ? &ctx.input(2).dims : nullptr));
  if (y.dims != g.y()) return ctx.error("output has shape " + dims_to_string(y.dims) + ", expected " + dims_to_string(g.y()));
  if (g.in.size() > static_cast<size_t>(kMaxSpatial))
    return ctx.unsupported(std::to_string(g.in.size()) + " spatial axes (at most " + std::to_string(kMaxSpatial) + ")");
  if (y.numel() == 0) return ok_status();
  Args p;
  p.rank = static_cast<int>(g.in.size());
  p.taps = 1;
  for (size_t d = 0; d < g.in.size(); ++d) {
    p.in[d] = g.in[d], p.out[d] = g.out[d], p.kernel[d] = g.win.kernel[d];
    p.strides[d] = g.win.strides[d], p.dilations[d] = g.win.dilations[d], p.pad_begin[d] = g.pads[d];
    p.taps *= g.win.kernel[d];
  }
  p.channels = g.channels, p.maps = g.maps, p.group = g.group;
  p.in_size = dims_numel(g.in), p.out_size = dims_numel(g.out), p.total = y.numel();
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    conv_transpose_kernel<T><<<grid_for(p.total), 256, 0, ctx.stream()>>>(
        x.as<const T>(), w.as<const T>(), has_b ? ctx.input(2).as<const T>() : nullptr, y.as<T>(), p);
    SRT_CUDA_LAUNCH("conv_transpose_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(ConvTranspose, "ConvTranspose", conv_transpose_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
