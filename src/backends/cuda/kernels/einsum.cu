// Einsum (opset 12) on CUDA, mirroring src/ops/einsum.cc with the same plan (ops::einsum::
// plan_for): a thread per output element finds its operands' base offsets from its output
// index, then walks the summed indices' space with an odometer, multiplying the operands at
// strided offsets. The plan travels by value (up to kMaxOperands operands and kMaxIndices
// output / summed indices each; more is kUnsupported here). Accumulation as on the CPU: float
// for the float types, wrapping 64-bit for integers.
#include <type_traits>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/einsum.h"

namespace streamrt::cuda {
namespace {

constexpr int kMaxOperands = 8;
constexpr int kMaxIndices = 12;

struct IndexSpace {
  int n = 0;
  int64_t size[kMaxIndices] = {};
  int64_t stride[kMaxOperands][kMaxIndices] = {};  // [operand][index]
  int64_t total = 1;
};

template <typename T>
struct Args {
  const T* x[kMaxOperands] = {};
  int k = 0;
  IndexSpace out, sum;
};

template <typename T>
__global__ void einsum_kernel(Args<T> a, T* y) {
  using A = std::conditional_t<std::is_integral_v<T>, unsigned long long, acc_t<T>>;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < a.out.total; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[kMaxOperands];
    for (int k = 0; k < a.k; ++k) off[k] = 0;
    int64_t rem = o;
    for (int d = a.out.n - 1; d >= 0; --d) {
      const int64_t q = rem / a.out.size[d], digit = rem - q * a.out.size[d];
      rem = q;
      for (int k = 0; k < a.k; ++k) off[k] += digit * a.out.stride[k][d];
    }
    int64_t counter[kMaxIndices];
    for (int d = 0; d < a.sum.n; ++d) counter[d] = 0;
    A acc = 0;
    for (int64_t s = 0; s < a.sum.total; ++s) {
      A prod = 1;
      for (int k = 0; k < a.k; ++k) prod = static_cast<A>(prod * static_cast<A>(to_acc(a.x[k][off[k]])));
      acc = static_cast<A>(acc + prod);
      for (int d = a.sum.n - 1; d >= 0; --d) {  // odometer step, innermost index last
        ++counter[d];
        for (int k = 0; k < a.k; ++k) off[k] += a.sum.stride[k][d];
        if (counter[d] < a.sum.size[d]) break;
        for (int k = 0; k < a.k; ++k) off[k] -= a.sum.stride[k][d] * a.sum.size[d];
        counter[d] = 0;
      }
    }
    if constexpr (std::is_integral_v<T>) y[o] = static_cast<T>(static_cast<long long>(acc));
    else y[o] = from_acc<T>(acc);
  }
}

Status fill_space(const ops::KernelContext& ctx, const ops::einsum::Plan& p, const std::vector<int>& indices,
                  IndexSpace& sp) {
  if (indices.size() > static_cast<size_t>(kMaxIndices))
    return ctx.unsupported("more than " + std::to_string(kMaxIndices) + " output or summed indices on CUDA");
  sp.n = static_cast<int>(indices.size());
  for (int d = 0; d < sp.n; ++d) {
    const size_t i = static_cast<size_t>(indices[static_cast<size_t>(d)]);
    sp.size[d] = p.sizes[i];
    sp.total *= p.sizes[i];
    for (size_t k = 0; k < p.strides.size(); ++k) sp.stride[k][d] = p.strides[k][i];
  }
  return ok_status();
}

Status einsum_cuda(CudaKernelContext& ctx) {
  if (ctx.num_inputs() == 0 || !ctx.has_output(0)) return ctx.error("needs at least one input and an output");
  if (ctx.num_inputs() > static_cast<size_t>(kMaxOperands))
    return ctx.unsupported("more than " + std::to_string(kMaxOperands) + " operands on CUDA");
  std::vector<Dims> dims;
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    if (!ctx.has_input(k) || ctx.input(k).dtype != ctx.input(0).dtype)
      return ctx.error("input " + std::to_string(k) + " is missing or not of input 0's type");
    dims.push_back(ctx.input(k).dims);
  }
  SRT_ASSIGN_OR_RETURN(ops::einsum::Plan p, ops::einsum::plan_for(ctx.node(), dims));
  const ops::TensorRef& y = ctx.output(0);
  if (y.dims != p.out_dims || y.dtype != ctx.input(0).dtype)
    return ctx.error("output shape " + dims_to_string(y.dims) + " differs from " + dims_to_string(p.out_dims));
  return cuda_dispatch<ops::kNumeric>(y.dtype, ctx.node().describe(), [&]<typename T>() {
    Args<T> a;
    a.k = static_cast<int>(ctx.num_inputs());
    for (int k = 0; k < a.k; ++k) a.x[k] = ctx.input(static_cast<size_t>(k)).as<T>();
    SRT_RETURN_IF_ERROR(fill_space(ctx, p, p.out_indices, a.out));
    SRT_RETURN_IF_ERROR(fill_space(ctx, p, p.sum_indices, a.sum));
    if (a.out.total == 0) return ok_status();
    einsum_kernel<T><<<grid_for(a.out.total), 256, 0, ctx.stream()>>>(a, y.as<T>());
    SRT_CUDA_LAUNCH("einsum_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Einsum, "Einsum", einsum_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
