// RMSNormalization on CUDA: one block per row; sum of squares in float, then scale.
// rms_norm_vec, for rows that fit the block's registers (up to 8 x 16 bytes a thread) with 16-byte
// aligned rows and a full-row scale (transformers' hidden states): each thread loads its 16-byte
// pieces once, keeps them in registers for the second pass, and stores 16 bytes at a time, so the
// row crosses memory once each way. Other shapes take rms_norm_kernel (element loads, two reads).
#include <algorithm>

#include "backends/cuda/kernels/norm_util.cuh"
#include "backends/cuda/kernels/rms_norm.h"

namespace streamrt::cuda {
namespace {

template <typename T>
__global__ void rms_norm_kernel(const T* x, const T* scale, int64_t scale_n, T* y, int64_t n, float eps) {
  __shared__ float scratch[32];
  const T* xr = x + blockIdx.x * n;
  T* yr = y + blockIdx.x * n;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = to_acc(xr[i]);
    sum += v * v;
  }
  sum = norm::block_all_reduce(sum, norm::SumOp{}, scratch);
  const float inv = rsqrtf(sum / static_cast<float>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float s = scale ? static_cast<float>(to_acc(scale[i % scale_n])) : 1.f;
    yr[i] = from_acc<T>(static_cast<float>(to_acc(xr[i])) * inv * s);
  }
}

constexpr int kVecPieces = 8;  // 16-byte pieces a thread keeps

template <typename T>
__global__ void rms_norm_vec(const T* x, const T* scale, T* y, int64_t n, float eps) {
  constexpr int kVec = 16 / sizeof(T);
  struct alignas(16) Piece {
    T v[kVec];
  };
  __shared__ float scratch[32];
  const int64_t pieces = n / kVec;
  const Piece* xr = reinterpret_cast<const Piece*>(x + blockIdx.x * n);
  Piece* yr = reinterpret_cast<Piece*>(y + blockIdx.x * n);
  Piece held[kVecPieces];
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < kVecPieces; ++k) {
    const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
    if (i < pieces) {
      held[k] = xr[i];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float v = static_cast<float>(to_acc(held[k].v[e]));
        sum += v * v;
      }
    }
  }
  sum = norm::block_all_reduce(sum, norm::SumOp{}, scratch);
  const float inv = rsqrtf(sum / static_cast<float>(n) + eps);
  const Piece* sr = reinterpret_cast<const Piece*>(scale);
#pragma unroll
  for (int k = 0; k < kVecPieces; ++k) {
    const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
    if (i < pieces) {
      Piece out, sc;
      if (scale) sc = sr[i];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float s = scale ? static_cast<float>(to_acc(sc.v[e])) : 1.f;
        out.v[e] = from_acc<T>(static_cast<float>(to_acc(held[k].v[e])) * inv * s);
      }
      yr[i] = out;
    }
  }
}

Status rms_norm_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.node().attr_int("axis", -1));
  SRT_ASSIGN_OR_RETURN(float eps, ctx.node().attr_float("epsilon", 1e-5f));
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) return ctx.error("axis out of range");
  int64_t n = 1;
  for (int64_t d = axis; d < rank; ++d) n *= x.dims[d];
  const int64_t rows = n ? x.numel() / n : 0;
  const bool has_scale = ctx.has_input(1);
  const int64_t scale_n = has_scale ? ctx.input(1).numel() : 1;
  if (has_scale && (scale_n == 0 || n % scale_n != 0)) return ctx.error("scale does not fit the normalized rows");
  return rms_norm_rows(ctx.stream(), x.dtype, x.data, has_scale ? ctx.input(1).data : nullptr, scale_n,
                       ctx.output(0).data, rows, n, eps)
      .with_context(ctx.node().describe());
}

}  // namespace

Status rms_norm_rows(cudaStream_t stream, DataType dtype, const void* x, const void* scale, int64_t scale_n, void* y,
                     int64_t rows, int64_t n, float eps) {
  if (rows == 0) return ok_status();
  if (rows > 0x7fffffff) return unsupported("rms_norm: too many rows for one launch");
  const int block = norm::block_for_row(n);
  return cuda_dispatch<ops::kFloats>(dtype, "rms_norm", [&]<typename T>() {
    constexpr int64_t kVec = 16 / sizeof(T);
    const T* s = static_cast<const T*>(scale);
    const int64_t pieces = n / kVec;
    if (n % kVec == 0 && (!s || scale_n == n) && aligned16(x) && aligned16(y) && (!s || aligned16(s)) &&
        pieces <= 1024 * kVecPieces) {
      // Enough threads that each keeps at most kVecPieces pieces; 128 at least, 1024 at most.
      const int vblock = std::clamp<int>(norm::block_for_row((pieces + kVecPieces - 1) / kVecPieces), 128, 1024);
      rms_norm_vec<T><<<static_cast<unsigned>(rows), vblock, 0, stream>>>(static_cast<const T*>(x), s,
                                                                          static_cast<T*>(y), n, eps);
      SRT_CUDA_LAUNCH("rms_norm_vec");
      return ok_status();
    }
    rms_norm_kernel<T><<<static_cast<unsigned>(rows), block, 0, stream>>>(static_cast<const T*>(x), s, scale_n,
                                                                          static_cast<T*>(y), n, eps);
    SRT_CUDA_LAUNCH("rms_norm_kernel");
    return ok_status();
  });
}

STREAMRT_REGISTER_CUDA_KERNEL(RMSNormalization, "RMSNormalization", rms_norm_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
