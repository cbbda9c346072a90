// WeightOnlyMatMul on CUDA (ops/weight_quant.h): Y = A @ dequant(W)^T + bias with W int8 / int4,
// dequantized inside the kernels, never into a full-precision copy in device memory.
//  - GEMV (rows of A <= kGemvMaxRows, a decode step): one warp per output channel; each lane reads
//    16 bytes of the channel's packed row at a time (16 int8 or 32 int4 weights), dequantizes them
//    in registers against every row of A, then the warp reduces. The weight is read once.
//  - GEMM (more rows): 64 x 64 output tiles; each K step stages a tile of A and a tile of W,
//    dequantized, in shared memory, and every thread accumulates 4 x 4 outputs in float.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/weight_quant.h"

namespace streamrt::cuda {
namespace {

constexpr int kGemvMaxRows = 8;
constexpr int kGemvWarps = 4;

struct Format {
  int bits;
  int64_t group, k, n, row_bytes, groups;
};

// Weights k0 .. k0 + kPer - 1 of channel c (kPer = 16 int8 or 32 int4) from the 16 bytes `b` at
// byte offset `byte0` of its row, into w[]; entries past K are zero (the last int4 group's pad).
// ZP: 8-bit zero points (int8 [N]) are present; the symmetric path has no subtraction.
template <typename T, int BITS, bool ZP>
__device__ __forceinline__ void dequant16(const Format& f, const uint8_t* b, int64_t byte0, const T* scales,
                                          const uint8_t* zeros, int64_t c, float* w) {
  if constexpr (BITS == 8) {
    const float s = static_cast<float>(to_acc(scales[c]));
    if constexpr (ZP) {
      const float z = static_cast<float>(reinterpret_cast<const int8_t*>(zeros)[c]);
#pragma unroll
      for (int i = 0; i < 16; ++i)
        w[i] = byte0 + i < f.k ? (static_cast<float>(static_cast<int8_t>(b[i])) - z) * s : 0.f;
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) w[i] = byte0 + i < f.k ? static_cast<float>(static_cast<int8_t>(b[i])) * s : 0.f;
    }
  } else {
    const int64_t k0 = byte0 * 2;  // a multiple of 32
    // The run's 32 weights lie in one group when group >= 32, in two of 16 otherwise.
    const int64_t g0 = c * f.groups + k0 / f.group;
    const int64_t g1 = f.group >= 32 || k0 + 16 >= f.k ? g0 : g0 + 1;
    const float s0 = static_cast<float>(to_acc(scales[g0])), z0 = static_cast<float>(zeros[g0]);
    const float s1 = static_cast<float>(to_acc(scales[g1])), z1 = static_cast<float>(zeros[g1]);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const float s = i < 8 ? s0 : s1, z = i < 8 ? z0 : z1;
      w[2 * i] = k0 + 2 * i < f.k ? (static_cast<float>(b[i] & 15) - z) * s : 0.f;
      w[2 * i + 1] = k0 + 2 * i + 1 < f.k ? (static_cast<float>(b[i] >> 4) - z) * s : 0.f;
    }
  }
}

template <typename T, int BITS, bool ZP>
__global__ void gemv_kernel(Format f, const T* a, int rows, const uint8_t* packed, bool aligned, const T* scales,
                            const uint8_t* zeros, const T* bias, T* y) {
  constexpr int kPer = BITS == 8 ? 16 : 32;  // weights in 16 bytes
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kGemvWarps;
  for (int64_t c = blockIdx.x * kGemvWarps + threadIdx.x / 32; c < f.n; c += warps) {
    const uint8_t* row = packed + c * f.row_bytes;
    float acc[kGemvMaxRows] = {};
    for (int64_t byte0 = static_cast<int64_t>(lane) * 16; byte0 < f.row_bytes; byte0 += 32 * 16) {
      uint8_t b[16];
      if (aligned) {
        *reinterpret_cast<uint4*>(b) = __ldg(reinterpret_cast<const uint4*>(row + byte0));
      } else {
#pragma unroll
        for (int i = 0; i < 16; ++i) b[i] = byte0 + i < f.row_bytes ? row[byte0 + i] : 0;
      }
      float w[kPer];
      dequant16<T, BITS, ZP>(f, b, byte0, scales, zeros, c, w);
      const int64_t k0 = BITS == 8 ? byte0 : byte0 * 2;
      const int64_t valid = f.k - k0;  // > 0: byte0 is inside the row
#pragma unroll
      for (int r = 0; r < kGemvMaxRows; ++r) {
        if (r >= rows) break;
        const T* ar = a + r * f.k + k0;
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < kPer; ++i)
          if (i < valid) s += static_cast<float>(to_acc(ar[i])) * w[i];
        acc[r] += s;
      }
    }
#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r) {
      if (r >= rows) break;
      float v = acc[r];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) y[r * f.n + c] = from_acc<T>(v + (bias ? static_cast<float>(to_acc(bias[c])) : 0.f));
    }
  }
}

constexpr int kTile = 64, kTileK = 32, kThreads = 256;

// W[c][k] dequantized (k < K); 8-bit zero points (int8 [N]) where `zeros` is set.
template <typename T>
__device__ __forceinline__ float weight_at(const Format& f, const uint8_t* packed, const T* scales,
                                           const uint8_t* zeros, int64_t c, int64_t k) {
  if (f.bits == 8) {
    const float q = static_cast<float>(static_cast<int8_t>(packed[c * f.row_bytes + k]));
    const float z = zeros ? static_cast<float>(reinterpret_cast<const int8_t*>(zeros)[c]) : 0.f;
    return (q - z) * static_cast<float>(to_acc(scales[c]));
  }
  const uint8_t b = packed[c * f.row_bytes + k / 2];
  const int64_t g = c * f.groups + k / f.group;
  return (static_cast<float>(k % 2 ? b >> 4 : b & 15) - static_cast<float>(zeros[g])) *
         static_cast<float>(to_acc(scales[g]));
}

// One 64 x 64 tile of Y per block (grid-stride over tiles); 256 threads, 4 x 4 outputs each.
template <typename T>
__global__ void gemm_kernel(Format f, const T* a, int64_t m, const uint8_t* packed, const T* scales,
                            const uint8_t* zeros, const T* bias, T* y) {
  __shared__ float as[kTileK][kTile + 1];  // [k][row]
  __shared__ float ws[kTileK][kTile + 1];  // [k][channel]
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t tiles_m = (m + kTile - 1) / kTile, tiles_n = (f.n + kTile - 1) / kTile;
  for (int64_t t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    const int64_t r0 = (t / tiles_n) * kTile, c0 = (t % tiles_n) * kTile;
    float acc[4][4] = {};
    for (int64_t k0 = 0; k0 < f.k; k0 += kTileK) {
      for (int i = threadIdx.x; i < kTile * kTileK; i += kThreads) {
        const int rr = i / kTileK, kk = i % kTileK;  // consecutive threads: consecutive k
        const int64_t r = r0 + rr, c = c0 + rr, k = k0 + kk;
        as[kk][rr] = r < m && k < f.k ? static_cast<float>(to_acc(a[r * f.k + k])) : 0.f;
        ws[kk][rr] = c < f.n && k < f.k ? weight_at(f, packed, scales, zeros, c, k) : 0.f;
      }
      __syncthreads();
#pragma unroll 8
      for (int kk = 0; kk < kTileK; ++kk) {
        float av[4], wv[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          av[i] = as[kk][ty * 4 + i];
          wv[i] = ws[kk][tx * 4 + i];
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * wv[j];
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t r = r0 + ty * 4 + i, c = c0 + tx * 4 + j;
        if (r < m && c < f.n)
          y[r * f.n + c] = from_acc<T>(acc[i][j] + (bias ? static_cast<float>(to_acc(bias[c])) : 0.f));
      }
  }
}

Status weight_only_matmul_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ops::WeightQuantFormat wf, ops::read_weight_quant_format(ctx.node()));
  const ops::TensorRef& a = ctx.input(0);
  // The shape rule checked these at build and load; the kernels index by them.
  auto is = [&](size_t i, DataType t, const Dims& d) {
    return ctx.has_input(i) && ctx.input(i).dtype == t && ctx.input(i).dims == d;
  };
  if (!is(1, wf.packed_dtype(), wf.packed_dims()) || !is(2, a.dtype, wf.scale_dims()) ||
      ((wf.bits == 4 || ctx.has_input(3)) && !is(3, wf.zero_dtype(), wf.zero_dims())) ||
      (ctx.has_input(4) && (ctx.input(4).dtype != a.dtype || ctx.input(4).numel() != wf.n)))
    return ctx.error("the weights do not have the dims and types that bits / group / K / N give");
  if (a.dims.empty() || a.dims.back() != wf.k) return ctx.error("A " + dims_to_string(a.dims) + " must end in K");
  if (ctx.output(0).numel() != a.numel() / wf.k * wf.n) return ctx.error("output does not have A's rows and N columns");
  const Format f{wf.bits, wf.group, wf.k, wf.n, wf.row_bytes(), wf.groups()};
  const int64_t m = a.numel() / wf.k;
  if (m == 0) return ok_status();
  const auto* packed = static_cast<const uint8_t*>(ctx.input(1).data);
  const uint8_t* zeros = ctx.has_input(3) ? ctx.input(3).as<const uint8_t>() : nullptr;
  return cuda_dispatch<ops::kFloats>(a.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* bias = ctx.has_input(4) ? ctx.input(4).as<const T>() : nullptr;
    const T* scales = ctx.input(2).as<const T>();
    if (m <= kGemvMaxRows) {
      const bool aligned = f.row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(packed) % 16 == 0;
      const unsigned grid = grid_for(f.n, kGemvWarps);
      auto launch = [&](auto kernel) {
        kernel<<<grid, kGemvWarps * 32, 0, ctx.stream()>>>(f, a.as<const T>(), static_cast<int>(m), packed, aligned,
                                                           scales, zeros, bias, ctx.output(0).as<T>());
      };
      if (f.bits == 4) launch(gemv_kernel<T, 4, true>);
      else if (zeros) launch(gemv_kernel<T, 8, true>);
      else launch(gemv_kernel<T, 8, false>);
      SRT_CUDA_LAUNCH("weight_only_gemv_kernel");
    } else {
      const int64_t tiles = ((m + kTile - 1) / kTile) * ((f.n + kTile - 1) / kTile);
      gemm_kernel<T><<<grid_for(tiles, 1), kThreads, 0, ctx.stream()>>>(f, a.as<const T>(), m, packed, scales, zeros,
                                                                         bias, ctx.output(0).as<T>());
      SRT_CUDA_LAUNCH("weight_only_gemm_kernel");
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(WeightOnlyMatMul, "WeightOnlyMatMul", weight_only_matmul_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
