// Variadic element-wise Max, Min, Sum, Mean over 1..N inputs with numpy broadcast, on CUDA.
// Mirrors src/ops/variadic.cc: per output element the inputs are folded left to right in
// the compute type (float for half types); Max / Min take every numeric type and propagate
// NaN; Sum / Mean take floats; Mean divides the total by the input count at the end.
// One launch folds up to kPerLaunch inputs; with more, the running value is kept in the
// context's workspace (compute type) between launches.
#include <algorithm>
#include <cmath>

#include "backends/cuda/kernels/elementwise.cuh"

namespace streamrt::cuda {
namespace {

constexpr int kPerLaunch = 8;

template <typename C>
__device__ __forceinline__ bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return isnan(v);
  else return false;
}

struct Max {
  static constexpr unsigned kTypes = ops::kNumeric;
  static constexpr bool kMean = false;
  template <typename C> __device__ static C f(C acc, C v) { return is_nan(acc) || acc > v ? acc : v; }
};
struct Min {
  static constexpr unsigned kTypes = ops::kNumeric;
  static constexpr bool kMean = false;
  template <typename C> __device__ static C f(C acc, C v) { return is_nan(acc) || acc < v ? acc : v; }
};
struct Sum {
  static constexpr unsigned kTypes = ops::kFloats;
  static constexpr bool kMean = false;
  template <typename C> __device__ static C f(C acc, C v) { return acc + v; }
};
struct Mean : Sum {
  static constexpr bool kMean = true;
};

template <typename T>
struct Chunk {
  const T* p[kPerLaunch];
  int count;     // inputs used in this launch
  bool first;    // p[0] starts the fold (else it continues from acc)
  bool last;     // write y (else write acc)
};

// acc_in / acc_out: the running value between launches (same buffer; each element is read and
// written by the same thread). divisor: the total input count, used by Mean on the last launch.
template <typename Idx, typename T, typename Op>
__global__ void variadic_kernel(T* y, acc_t<T>* acc, Idx n, BroadcastIndexer<kPerLaunch> ix, Chunk<T> in,
                                acc_t<T> divisor) {
  using C = acc_t<T>;
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < n; i += Idx(gridDim.x) * blockDim.x) {
    Idx off[kPerLaunch];
    ix.offsets(i, off);
    C a = in.first ? to_acc(in.p[0][off[0]]) : acc[i];
#pragma unroll
    for (int k = 0; k < kPerLaunch; ++k)
      if (k < in.count && !(in.first && k == 0)) a = Op::f(a, to_acc(in.p[k][off[k]]));
    if (in.last) {
      if constexpr (Op::kMean) a = a / divisor;
      y[i] = from_acc<T>(a);
    } else {
      acc[i] = a;
    }
  }
}

template <typename Op>
Status variadic_cuda(CudaKernelContext& ctx) {
  if (!ctx.has_output(0)) return ctx.error("needs an output");
  const ops::TensorRef& y = ctx.output(0);
  const size_t num = ctx.num_inputs();
  if (num == 0) return ctx.error("needs at least one input");
  for (size_t k = 0; k < num; ++k) {
    if (!ctx.has_input(k)) return ctx.error("input " + std::to_string(k) + " is missing");
    if (ctx.input(k).dtype != y.dtype) return ctx.error("input " + std::to_string(k) + " has another data type");
  }
  return cuda_dispatch<Op::kTypes>(y.dtype, ctx.node().describe(), [&]<typename T>() -> Status {
    using C = acc_t<T>;
    const int64_t n = y.numel();
    // Check every input's shape before launching anything.
    static const Dims kScalar;
    std::vector<BroadcastIndexer<kPerLaunch>> ixs;
    for (size_t start = 0; start < num; start += kPerLaunch) {
      std::array<const Dims*, kPerLaunch> dims;
      for (int k = 0; k < kPerLaunch; ++k)
        dims[k] = start + k < num ? &ctx.input(start + k).dims : &kScalar;  // unused: stride 0
      SRT_RETURN_IF_ERROR(make_indexer<kPerLaunch>(ctx, y.dims, dims, &ixs.emplace_back()));
    }
    if (n == 0) return ok_status();
    C* acc = nullptr;
    if (num > static_cast<size_t>(kPerLaunch)) {
      SRT_RETURN_IF_ERROR(ctx.resources().ensure_workspace(static_cast<size_t>(n) * sizeof(C)));
      acc = static_cast<C*>(ctx.resources().workspace);
    }
    const C divisor = static_cast<C>(num);
    for (size_t start = 0, chunk = 0; start < num; start += kPerLaunch, ++chunk) {
      Chunk<T> in{};
      in.count = static_cast<int>(std::min<size_t>(kPerLaunch, num - start));
      for (int k = 0; k < in.count; ++k) in.p[k] = ctx.input(start + k).as<const T>();
      for (int k = in.count; k < kPerLaunch; ++k) in.p[k] = in.p[0];  // never read
      in.first = start == 0;
      in.last = start + kPerLaunch >= num;
      if (n <= std::numeric_limits<int32_t>::max())
        variadic_kernel<uint32_t, T, Op><<<grid_for(n, kBlock), kBlock, 0, ctx.stream()>>>(
            y.as<T>(), acc, static_cast<uint32_t>(n), ixs[chunk], in, divisor);
      else
        variadic_kernel<int64_t, T, Op><<<grid_for(n, kBlock), kBlock, 0, ctx.stream()>>>(y.as<T>(), acc, n,
                                                                                         ixs[chunk], in, divisor);
      SRT_CUDA_LAUNCH("variadic kernel");
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Max, "Max", variadic_cuda<Max>, cuda_dtypes(Max::kTypes));
STREAMRT_REGISTER_CUDA_KERNEL(Min, "Min", variadic_cuda<Min>, cuda_dtypes(Min::kTypes));
STREAMRT_REGISTER_CUDA_KERNEL(Sum, "Sum", variadic_cuda<Sum>, cuda_dtypes(Sum::kTypes));
STREAMRT_REGISTER_CUDA_KERNEL(Mean, "Mean", variadic_cuda<Mean>, cuda_dtypes(Mean::kTypes));

}  // namespace streamrt::cuda
