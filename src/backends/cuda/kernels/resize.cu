// Resize / Upsample on CUDA, mirroring src/ops/resize.cc: the same parameters (resize_params,
// from the host copies of roi / scales / sizes) and the same geometry (ops/resize.h, in double).
// One thread per output element computes its axes' windows and sums over the product of their
// taps (nearest: copies its one source element; tf_crop_and_resize outside the input: the
// extrapolation value).
#include <limits>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/data_movement.h"
#include "ops/resize.h"

namespace streamrt::cuda {
namespace {

using ops::kResizeMaxRank;
using ops::ResizeParams;
using ops::ResizeWindow;

struct Strides {
  int64_t s[kResizeMaxRank] = {};
};

// As the CPU: integers round half to even and saturate, floats round once.
template <typename T>
__device__ __forceinline__ T to_out(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    const double r = rint(v);
    if (isnan(r)) return T(0);
    if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else {
    return from_acc<T>(static_cast<float>(v));
  }
}

template <typename T, bool kNearest>
__global__ void resize_kernel(const T* x, T* y, ResizeParams p, Strides st, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    ResizeWindow w[kResizeMaxRank];
    bool outside = false;
    int64_t rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.axis[d].out;
      rem /= p.axis[d].out;
      w[d] = ops::resize_window(p, p.axis[d], o);
      outside = outside || w[d].outside;
    }
    if (outside) {
      y[i] = to_out<T>(p.extrapolation);
      continue;
    }
    if constexpr (kNearest) {
      int64_t off = 0;
      for (int d = 0; d < p.rank; ++d) off += ops::resize_index(p.axis[d], w[d], 0) * st.s[d];
      y[i] = x[off];
    } else {
      int k[kResizeMaxRank] = {};
      double acc = 0;
      for (;;) {
        double wt = 1;
        int64_t off = 0;
        for (int d = 0; d < p.rank; ++d) {
          wt *= ops::resize_weight(p, p.axis[d], w[d], k[d]);
          off += ops::resize_index(p.axis[d], w[d], k[d]) * st.s[d];
        }
        if (wt != 0) acc += wt * static_cast<double>(to_acc(x[off]));
        int d = p.rank - 1;
        for (; d >= 0; --d) {
          if (++k[d] < w[d].taps) break;
          k[d] = 0;
        }
        if (d < 0) break;
      }
      y[i] = to_out<T>(acc);
    }
  }
}

Status resize_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::ResizeSlots slots = ops::resize_slots(ctx.node());
  const int slot_of[3] = {slots.roi, slots.scales, slots.sizes};
  const Tensor* given[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < 3; ++k) {
    const int s = slot_of[k];
    if (s < 0 || !ctx.has_input(static_cast<size_t>(s))) continue;
    const Tensor* h = ctx.host_value(static_cast<size_t>(s));
    if (!h) return ctx.error("input " + std::to_string(s) + " has no host copy");
    if (h->numel() > 0) given[k] = h;
  }
  SRT_ASSIGN_OR_RETURN(ResizeParams p, ops::resize_params(ctx.node(), x.dims, {given[0], given[1], given[2]}));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, ops::resize_output_dims(p)));
  const ops::TensorRef& y = ctx.output(0);
  const int64_t total = y.numel();
  if (total == 0) return ok_status();
  Strides st;
  const std::vector<int64_t> dense = ops::dense_strides(x.dims);
  for (int d = 0; d < p.rank; ++d) st.s[d] = dense[static_cast<size_t>(d)];
  auto launch = [&]<typename T, bool kNearest>() -> Status {
    resize_kernel<T, kNearest><<<grid_for(total), 256, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), p, st, total);
    SRT_CUDA_LAUNCH("resize_kernel");
    return ok_status();
  };
  if (p.mode == ops::ResizeMode::kNearest)
    return cuda_dispatch<ops::kAll>(x.dtype, ctx.node().describe(),
                                    [&]<typename T>() { return launch.template operator()<T, true>(); });
  return cuda_dispatch<ops::kNumeric>(x.dtype, ctx.node().describe(),
                                      [&]<typename T>() { return launch.template operator()<T, false>(); });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Resize, "Resize", resize_cuda, cuda_dtypes(ops::kAll));
STREAMRT_REGISTER_CUDA_KERNEL(Upsample, "Upsample", resize_cuda, cuda_dtypes(ops::kAll));

}  // namespace streamrt::cuda
