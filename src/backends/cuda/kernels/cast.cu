// Cast and CastLike on CUDA: any streamrt dtype to any other, with the conversion
// rules of src/ops/cast.cc:
//   - float -> integer truncates toward zero; NaN becomes 0 and out-of-range values saturate;
//   - integer -> integer wraps modulo 2^bits;
//   - anything -> bool is value != 0 (NaN is true); bool -> anything is 0 / 1 (bool bytes are
//     read as uint8 and normalized, so a stray byte value is never loaded as bool);
//   - float16 / bfloat16 convert through float (round to nearest even on the way back); float64
//     they round once (__double2half / __double2bfloat16), as the CPU kernel does.
// The same dtype (other than bool) is a device-to-device copy.
#include <limits>

#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

template <typename I>
__device__ __forceinline__ I float_to_int(double f) {
  if (isnan(f)) return 0;
  // In double every bound of a 64-bit-or-narrower integer is exact enough to compare with.
  const double d = trunc(f);
  if (d <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (d >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

template <typename To, typename From>
__device__ __forceinline__ To convert(From raw) {
  const auto v = to_acc(raw);  // float for half types
  using V = std::remove_const_t<decltype(v)>;
  if constexpr (std::is_same_v<To, bool>) return v != V(0);
  else if constexpr (std::is_same_v<To, __half> && std::is_same_v<V, double>) return __double2half(v);
  else if constexpr (std::is_same_v<To, __nv_bfloat16> && std::is_same_v<V, double>) return __double2bfloat16(v);
  else if constexpr (std::is_same_v<To, __half> || std::is_same_v<To, __nv_bfloat16>) return from_acc<To>(static_cast<float>(v));
  else if constexpr (std::is_floating_point_v<To>) return static_cast<To>(v);
  else if constexpr (std::is_floating_point_v<V>) return float_to_int<To>(v);
  else return static_cast<To>(v);
}

// From is the storage type read (uint8_t for bool, normalized to 0 / 1 first).
template <typename To, typename From, bool kFromBool>
struct CastFn {
  __device__ __forceinline__ To operator()(From x) const {
    if constexpr (kFromBool) return convert<To>(static_cast<uint8_t>(x != 0));
    else return convert<To>(x);
  }
};

Status cast_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_output(0)) return ctx.error("needs input and output");
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.numel() != y.numel())
    return ctx.error("input 0 has shape " + dims_to_string(x.dims) + " but output 0 has shape " +
                     dims_to_string(y.dims));
  const int64_t n = x.numel();
  if (x.dtype == y.dtype && x.dtype != DataType::kBool) {
    if (x.data != y.data && n > 0)
      SRT_CUDA(cudaMemcpyAsync(y.data, x.data, x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return ok_status();
  }
  const std::string what = ctx.node().describe();
  return cuda_dispatch<ops::kAll | kCudaWideTypes>(x.dtype, what, [&]<typename From>() {
    return cuda_dispatch<ops::kAll | kCudaWideTypes>(y.dtype, what, [&]<typename To>() {
      if constexpr (std::is_same_v<From, bool>)
        return launch_same_shape(ctx, "Cast kernel", y.as<To>(), n, CastFn<To, uint8_t, true>{},
                                 x.as<const uint8_t>());
      else
        return launch_same_shape(ctx, "Cast kernel", y.as<To>(), n, CastFn<To, From, false>{}, x.as<const From>());
    });
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Cast, "Cast", cast_cuda, cuda_dtypes(ops::kAll | kCudaWideTypes));
STREAMRT_REGISTER_CUDA_KERNEL(CastLike, "CastLike", cast_cuda, cuda_dtypes(ops::kAll | kCudaWideTypes));

}  // namespace streamrt::cuda
