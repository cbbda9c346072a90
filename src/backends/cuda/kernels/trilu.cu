// Trilu (opset 14) on CUDA, mirroring src/ops/trilu.cc: keeps the upper (upper = 1) or lower
// triangle of the last two axes, zeroing the rest; k (input 1, a shape input so its host copy
// is here) shifts the diagonal: upper keeps j - i >= k, lower keeps j - i <= k. Elements are
// copied by size, so every data type works; each element is read and written by one thread,
// so an output aliasing the input is fine.
#include <algorithm>

#include "backends/cuda/kernels/cuda_types.cuh"

namespace streamrt::cuda {
namespace {

// U: an unsigned integer of the element's size (all-zero bits are 0 / false in every type).
template <typename U>
__global__ void trilu_kernel(const U* x, U* y, int64_t n, int64_t rows, int64_t cols, int64_t k, bool upper) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t q = e / cols;
    const int64_t j = e - q * cols;
    const int64_t i = q % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    y[e] = keep ? x[e] : U(0);
  }
}

Status trilu_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (x.dims.size() < 2) return ctx.error("input must have rank >= 2, got shape " + dims_to_string(x.dims));
  if (y.dims != x.dims || y.dtype != x.dtype)
    return ctx.error("output " + dims_to_string(y.dims) + " does not match the input " + dims_to_string(x.dims));
  int64_t k = 0;
  if (ctx.has_input(1)) {
    if (ctx.input(1).numel() != 1 || ctx.input(1).dtype != DataType::kInt64)
      return ctx.error("k must be an int64 scalar");
    const Tensor* kv = ctx.host_value(1);
    if (!kv) return internal_error(ctx.node().describe() + ": no host copy of k");
    SRT_ASSIGN_OR_RETURN(auto vals, kv->to_int64_vector());
    if (vals.size() != 1) return ctx.error("k must be an int64 scalar");
    k = vals[0];
  }
  SRT_ASSIGN_OR_RETURN(int64_t upper, ctx.node().attr_int("upper", 1));
  const size_t rank = x.dims.size();
  const int64_t rows = x.dims[rank - 2], cols = x.dims[rank - 1];
  const int64_t n = x.numel();
  if (n == 0) return ok_status();
  // Beyond these bounds k changes nothing; clamping keeps the comparison far from overflow.
  k = std::clamp<int64_t>(k, -rows, cols);
  auto go = [&]<typename U>() {
    trilu_kernel<U><<<grid_for(n), 256, 0, ctx.stream()>>>(x.as<const U>(), y.as<U>(), n, rows, cols, k, upper != 0);
    SRT_CUDA_LAUNCH("trilu_kernel");
    return ok_status();
  };
  return dispatch_by_size(x.dtype, ctx, go);
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Trilu, "Trilu", trilu_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
