// TopK on CUDA: a thread per (outer, inner) row scans the axis once and keeps the best k seen
// so far sorted in place in the output (insertion: O(dim * k) per row in the worst case, a
// simple kernel for the small k of sampling and beam search, not a radix select). Order and
// parameters are the CPU's (ops/topk.h), so ties and NaN come out the same. k comes from the
// attribute (opset < 10) or the host copy of input K (a shape input). Without an Indices
// output the indices live in the context workspace.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/data_movement.h"
#include "ops/topk.h"

namespace streamrt::cuda {
namespace {

template <typename T>
__global__ void topk_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices,
                            int64_t outer, int64_t dim, int64_t inner, int64_t k, bool largest) {
  const int64_t n = outer * inner;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < n; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, j = c - o * inner;
    const T* row = x + o * dim * inner + j;
    T* vals = values + o * k * inner + j;
    int64_t* idx = indices + o * k * inner + j;
    int64_t count = 0;  // entries held, sorted by topk_before
    for (int64_t i = 0; i < dim; ++i) {
      const acc_t<T> v = to_acc(row[i * inner]);
      // Indices arrive in increasing order, so an equal value held already stays ahead.
      if (count == k && !ops::topk_before(v, i, to_acc(vals[(k - 1) * inner]), idx[(k - 1) * inner], largest))
        continue;
      int64_t pos = count < k ? count++ : k - 1;
      while (pos > 0 && ops::topk_before(v, i, to_acc(vals[(pos - 1) * inner]), idx[(pos - 1) * inner], largest)) {
        vals[pos * inner] = vals[(pos - 1) * inner];
        idx[pos * inner] = idx[(pos - 1) * inner];
        --pos;
      }
      vals[pos * inner] = row[i * inner];
      idx[pos * inner] = i;
    }
  }
}

Result<int64_t> k_of(const CudaKernelContext& ctx) {
  std::optional<std::vector<int64_t>> k_input;
  if (ctx.opset() >= 10 && ctx.has_input(1)) {
    const Tensor* kv = ctx.host_value(1);
    if (!kv) return ctx.error("K (input 1) is not available on the host");
    if (kv->dtype() != DataType::kInt64) return ctx.error("K must be int64");
    SRT_ASSIGN_OR_RETURN(k_input, kv->to_int64_vector());
  }
  return ops::topk_k(ctx.node(), k_input);
}

Status topk_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(int64_t k, k_of(ctx));
  SRT_ASSIGN_OR_RETURN(ops::TopKParams p, ops::topk_params(ctx.node(), x.dims, k));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, p.out_dims));
  const int64_t n_out = dims_numel(p.out_dims);
  if (n_out == 0) return ok_status();
  int64_t* indices = nullptr;
  if (ctx.has_output(1)) {
    SRT_RETURN_IF_ERROR(ops::check_output(ctx, 1, DataType::kInt64, p.out_dims));
    indices = ctx.output(1).as<int64_t>();
  } else {
    SRT_RETURN_IF_ERROR(ctx.resources().ensure_workspace(static_cast<size_t>(n_out) * sizeof(int64_t)));
    indices = static_cast<int64_t*>(ctx.resources().workspace);
  }
  const int64_t rows = p.outer * p.inner;
  return cuda_dispatch<ops::kNumeric>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    topk_kernel<T><<<grid_for(rows, 128), 128, 0, ctx.stream()>>>(x.as<const T>(), ctx.output(0).as<T>(), indices,
                                                                   p.outer, p.dim, p.inner, p.k, p.largest);
    SRT_CUDA_LAUNCH("topk_kernel");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(TopK, "TopK", topk_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
