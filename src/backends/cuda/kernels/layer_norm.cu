// LayerNormalization (opset 17) on CUDA, mirroring src/ops/layer_normalization.cc (parameter
// checks, axis, epsilon and the [rows, cols] view come from ops/layer_normalization.h):
// Y = (X - mean) / sqrt(var + epsilon) * Scale + B over the axes [axis, rank); optional outputs
// Mean and InvStdDev (one per row, in the stash type the output was allocated with).
// A block per row; statistics in float, two passes (mean, then the mean squared deviation: no
// cancellation when |mean| >> stddev). Scale and B broadcast to X (numpy): the usual per-column
// parameters index by column; any other broadcast goes through the element's multi-index.
#include <cmath>

#include "backends/cuda/kernels/norm_util.cuh"
#include "ops/layer_normalization.h"

namespace streamrt::cuda {
namespace {

using norm::StridedSpace;
using norm::SumOp;

// How a parameter (Scale or B) is found for element (row, col).
struct Param {
  enum Mode : int { kAbsent, kPerCol, kStrided } mode = kAbsent;
  const void* data = nullptr;
  StridedSpace space;  // kStrided: offset of the element's linear index
};

enum class StatType : int { kNone, kFloat32, kFloat16, kBFloat16 };

__device__ __forceinline__ void store_stat(void* p, StatType t, int64_t i, float v) {
  switch (t) {
    case StatType::kFloat32: static_cast<float*>(p)[i] = v; break;
    case StatType::kFloat16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case StatType::kBFloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    default: break;
  }
}

template <typename T>
__device__ __forceinline__ float param_at(const Param& p, int64_t row, int64_t col, int64_t cols) {
  const T* d = static_cast<const T*>(p.data);
  if (p.mode == Param::kPerCol) return to_acc(d[col]);
  return to_acc(d[p.space.offset(row * cols + col)]);
}

template <typename T>
__global__ void layer_norm_rows(const T* x, T* y, int64_t rows, int64_t cols, float epsilon, Param scale,
                                Param bias, void* mean_out, StatType mean_type, void* inv_out, StatType inv_type) {
  __shared__ float scratch[32];
  const float n = static_cast<float>(cols);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    float sum = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += to_acc(xr[c]);
    const float mean = norm::block_all_reduce(sum, SumOp{}, scratch) / n;
    float sq = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float d = to_acc(xr[c]) - mean;
      sq += d * d;
    }
    const float var = norm::block_all_reduce(sq, SumOp{}, scratch) / n;
    const float inv_std = 1.0f / sqrtf(var + epsilon);
    if (threadIdx.x == 0) {
      if (mean_out) store_stat(mean_out, mean_type, r, mean);
      if (inv_out) store_stat(inv_out, inv_type, r, inv_std);
    }
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float v = (to_acc(xr[c]) - mean) * inv_std * param_at<T>(scale, r, c, cols);
      if (bias.mode != Param::kAbsent) v += param_at<T>(bias, r, c, cols);
      yr[c] = from_acc<T>(v);
    }
  }
}

__global__ void fill_nan(void* p, StatType t, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store_stat(p, t, i, NAN);
}

// Describes how input `i` (Scale or B, already checked to broadcast to X) is indexed.
Result<Param> make_param(const CudaKernelContext& ctx, size_t i, int64_t axis) {
  Param p;
  if (!ctx.has_input(i)) return p;
  const ops::TensorRef& t = ctx.input(i);
  const Dims& xd = ctx.input(0).dims;
  const std::vector<int64_t> st = ops::broadcast_strides(t.dims, xd);
  p.data = t.data;
  // Per column: no stride on the row axes, X's own contiguous strides on the normalized axes
  // (size-1 axes do not matter either way).
  bool per_col = true;
  int64_t contiguous = 1;
  for (size_t d = xd.size(); d-- > 0;) {
    if (xd[d] != 1) {
      const int64_t want = static_cast<int64_t>(d) >= axis ? contiguous : 0;
      if (st[d] != want) per_col = false;
    }
    contiguous *= xd[d];
  }
  if (per_col) {
    p.mode = Param::kPerCol;
    return p;
  }
  // General broadcast: X's dims with the parameter's strides.
  if (!norm::make_space(xd, st, &p.space))
    return ctx.unsupported("input " + std::to_string(i) + " of shape " + dims_to_string(t.dims) +
                           " broadcasts over too many axes of X " + dims_to_string(xd));
  p.mode = Param::kStrided;
  return p;
}

StatType stat_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: return StatType::kFloat32;
    case DataType::kFloat16: return StatType::kFloat16;
    case DataType::kBFloat16: return StatType::kBFloat16;
    default: return StatType::kNone;
  }
}

Status layer_norm_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  SRT_RETURN_IF_ERROR(ops::check_layer_norm_params(ctx));
  if (y.dims != x.dims || y.dtype != x.dtype)
    return ctx.error("output " + dims_to_string(y.dims) + " does not match X " + dims_to_string(x.dims));
  SRT_ASSIGN_OR_RETURN(ops::LayerNormGeometry g, ops::layer_norm_geometry(ctx.node(), x.dims));
  const int64_t axis = g.axis, rows = g.rows, cols = g.cols;
  const float epsilon = g.epsilon;
  void* stat_out[2] = {nullptr, nullptr};
  StatType stat_types[2] = {StatType::kNone, StatType::kNone};
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_output(i)) continue;
    const ops::TensorRef& o = ctx.output(i);
    if (o.numel() != rows)
      return ctx.error("output " + std::to_string(i) + " holds " + std::to_string(o.numel()) + " values, expected " +
                       std::to_string(rows));
    stat_types[i - 1] = stat_type(o.dtype);
    if (stat_types[i - 1] == StatType::kNone)
      return ctx.unsupported(std::string("output ") + std::to_string(i) + " has data type " + dtype_name(o.dtype));
    stat_out[i - 1] = o.data;
  }
  if (rows == 0) return ok_status();
  if (cols == 0) {
    // Nothing to normalize: statistics of an empty set are NaN.
    for (int i = 0; i < 2; ++i) {
      if (!stat_out[i]) continue;
      fill_nan<<<grid_for(rows), 256, 0, ctx.stream()>>>(stat_out[i], stat_types[i], rows);
      SRT_CUDA_LAUNCH("layer_norm fill_nan");
    }
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(Param scale, make_param(ctx, 1, axis));
  SRT_ASSIGN_OR_RETURN(Param bias, make_param(ctx, 2, axis));
  const int block = norm::block_for_row(cols, 512);
  return cuda_dispatch<ops::kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    layer_norm_rows<T><<<grid_for(rows, 1), block, 0, ctx.stream()>>>(
        x.as<const T>(), y.as<T>(), rows, cols, epsilon, scale, bias, stat_out[0], stat_types[0], stat_out[1],
        stat_types[1]);
    SRT_CUDA_LAUNCH("layer_norm_rows");
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(LayerNormalization, "LayerNormalization", layer_norm_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
