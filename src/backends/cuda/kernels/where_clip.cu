// Where and Clip on CUDA. Mirrors src/ops/where.cc and src/ops/clip.cc.
//   Where: y = condition ? x : y with numpy broadcast over all three inputs; elements are
//   copied as unsigned integers of their width, so every dtype works.
//   Clip: y = min(max(x, lo), hi). Opset < 11: float attributes 'min' / 'max'; opset >= 11:
//   optional scalar inputs 1 / 2 of x's dtype, which live on the device and are read by the
//   kernel itself (no copy to the host, no synchronization). A missing bound is unbounded;
//   lo > hi gives hi everywhere; NaN passes through.
#include <limits>

#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

template <typename U>
struct SelectFn {
  __device__ __forceinline__ U operator()(uint8_t c, U a, U b) const { return c ? a : b; }
};

Status where_cuda(CudaKernelContext& ctx) {
  if (ctx.num_inputs() < 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2) || !ctx.has_output(0))
    return ctx.error("needs inputs condition, X, Y and an output");
  const ops::TensorRef& c = ctx.input(0);
  const ops::TensorRef& a = ctx.input(1);
  const ops::TensorRef& b = ctx.input(2);
  const ops::TensorRef& y = ctx.output(0);
  if (c.dtype != DataType::kBool || a.dtype != b.dtype || a.dtype != y.dtype)
    return ctx.error("condition must be bool and x, y of the output's data type");
  auto run = [&]<typename U>() {
    return launch_elementwise(ctx, "Where kernel", y.as<U>(), y.dims, SelectFn<U>{}, operand<uint8_t>(c),
                              operand<U>(a), operand<U>(b));
  };
  return dispatch_by_size(a.dtype, ctx, run);
}

constexpr int kBoundsAsInputsSince = 11;

// Bounds: a device pointer to one element of x's type, or nullptr for the host value `*_def`.
template <typename T>
struct ClipFn {
  const T* lo_p;
  const T* hi_p;
  acc_t<T> lo_def;
  acc_t<T> hi_def;
  __device__ __forceinline__ T operator()(T x) const {
    using C = acc_t<T>;
    const C lo = lo_p ? to_acc(*lo_p) : lo_def;
    const C hi = hi_p ? to_acc(*hi_p) : hi_def;
    C v = to_acc(x);
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    return from_acc<T>(v);
  }
};

// Device pointer of bound input `i` (one element of x's dtype), nullptr when absent.
Status bound_input(const CudaKernelContext& ctx, size_t i, const void** out) {
  *out = nullptr;
  if (!ctx.has_input(i)) return ok_status();
  const ops::TensorRef& b = ctx.input(i);
  if (b.dtype != ctx.input(0).dtype || b.numel() != 1)
    return ctx.error(std::string(i == 1 ? "min" : "max") + " must be a scalar " + dtype_name(ctx.input(0).dtype) +
                     ", got " + dtype_name(b.dtype) + " of shape " + dims_to_string(b.dims));
  *out = b.data;
  return ok_status();
}

Status clip_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input X and output Y");
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.numel() != y.numel() || x.dtype != y.dtype)
    return ctx.error("input " + std::string(dtype_name(x.dtype)) + " " + dims_to_string(x.dims) +
                     " does not match output " + dtype_name(y.dtype) + " " + dims_to_string(y.dims));
  return cuda_dispatch<ops::kNumeric>(x.dtype, ctx.node().describe(), [&]<typename T>() -> Status {
    using C = acc_t<T>;
    ClipFn<T> fn{nullptr, nullptr, std::numeric_limits<C>::lowest(), std::numeric_limits<C>::max()};
    if (ctx.opset() < kBoundsAsInputsSince) {
      if constexpr (std::is_floating_point_v<C>) {
        SRT_ASSIGN_OR_RETURN(fn.lo_def, ctx.node().attr_float("min", fn.lo_def));
        SRT_ASSIGN_OR_RETURN(fn.hi_def, ctx.node().attr_float("max", fn.hi_def));
      } else {
        return ctx.unsupported("Clip before opset 11 takes float inputs");
      }
    } else {
      const void* lo = nullptr;
      const void* hi = nullptr;
      SRT_RETURN_IF_ERROR(bound_input(ctx, 1, &lo));
      SRT_RETURN_IF_ERROR(bound_input(ctx, 2, &hi));
      fn.lo_p = static_cast<const T*>(lo);
      fn.hi_p = static_cast<const T*>(hi);
    }
    return launch_same_shape(ctx, "Clip kernel", y.as<T>(), y.numel(), fn, x.as<const T>());
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Where, "Where", where_cuda, ops::kAnyDType);
STREAMRT_REGISTER_CUDA_KERNEL(Clip, "Clip", clip_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
