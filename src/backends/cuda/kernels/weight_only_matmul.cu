// WeightOnlyMatMul on CUDA (ops/weight_quant.h): Y = A @ dequant(W)^T + bias with W int8 / int4 / float8,
// dequantized inside the kernels, never into a full-precision copy in device memory.
//  - GEMV (rows of A <= kGemvMaxRows, a decode step): one to four warps per kGemvChannels output
//    channels; each thread reads 16 bytes of each channel's packed row at a time (16 int8 or 32 int4
//    codes) and the matching run of every row of A once (16-byte loads), then the threads reduce.
//    The weight is read once; codes become floats without integer conversions. A decode step's
//    single row has kernels of its own (fewer registers, more warps in flight).
//  - GEMM (more rows): 64 x 64 output tiles; each K step stages a tile of A and a tile of W,
//    dequantized, in shared memory, and every thread accumulates 4 x 4 outputs in float.
#include "backends/cuda/kernels/cuda_types.cuh"
#include "ops/weight_quant.h"

namespace streamrt::cuda {
namespace {

constexpr int kGemvMaxRows = 8;
constexpr int kGemvThreads = 128;
constexpr int kGemvChannels = 2;  // per channel group: each load of A serves both

struct Format {
  int bits;
  int64_t group, k, n, row_bytes, groups;
  bool fp8;  // 8 bits: float8 e4m3 codes
};

// A code as a float without an integer conversion (a quarter-rate instruction on sm_90): the code
// in the low mantissa bits of 2^23, minus 2^23 (plus the offset of a signed code).
__device__ __forceinline__ float nibble(uint32_t b) { return __int_as_float(0x4B000000u | (b & 15u)) - 8388608.f; }
__device__ __forceinline__ float int8_code(uint32_t b) {
  return __int_as_float(0x4B000000u | ((b ^ 0x80u) & 0xFFu)) - 8388736.f;
}
// A float8 e4m3 code (low byte of b) as a float, divided by 2^8 (kFp8Unit; callers fold it into the
// scale): its exponent and mantissa bits placed in a half's (bias 15 against 7, subnormals
// included) and converted, no table and no FP8 instructions (any GPU).
constexpr float kFp8Unit = 256.f;
__device__ __forceinline__ float fp8_value(uint32_t b) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(((b & 0x80u) << 8) | ((b & 0x7Fu) << 7))));
}

// kPer values of A from p (count of them inside the row; the rest are 0): 16-byte loads when
// `vec` (A's rows 16-byte aligned) and the run is whole.
template <typename T, int kPer>
__device__ __forceinline__ void load_run(const T* p, int64_t count, bool vec, float* out) {
  constexpr int kPerLoad = 16 / sizeof(T);
  if (vec && count >= kPer) {
#pragma unroll
    for (int j = 0; j < kPer / kPerLoad; ++j) {
      union {
        uint4 u;
        T t[kPerLoad];
      } v;
      v.u = __ldg(reinterpret_cast<const uint4*>(p) + j);
#pragma unroll
      for (int i = 0; i < kPerLoad; ++i) out[j * kPerLoad + i] = static_cast<float>(to_acc(v.t[i]));
    }
  } else {
#pragma unroll
    for (int i = 0; i < kPer; ++i) out[i] = i < count ? static_cast<float>(to_acc(p[i])) : 0.f;
  }
}

// 16 bytes of a packed row (zero past its end).
__device__ __forceinline__ uint4 load_codes(const uint8_t* row, int64_t byte0, int64_t row_bytes, bool aligned) {
  if (aligned) return __ldg(reinterpret_cast<const uint4*>(row + byte0));
  union {
    uint4 u;
    uint8_t b[16];
  } v;
#pragma unroll
  for (int i = 0; i < 16; ++i) v.b[i] = byte0 + i < row_bytes ? row[byte0 + i] : 0;
  return v.u;
}

// kLanes threads (one to four warps) per kGemvChannels output channels, kGemvThreads a block. Per
// 16-byte run of each channel's packed row (kPer = 16 int8 or 32 int4 codes) a thread loads the
// matching run of each row of A once, for every channel, and takes the zero point out of the dot
// product: sum a (q - z) s = s (sum a q - z sum a), per half run (a half lies in one 4-bit group:
// groups are >= 16). A decode step's weight is read once and the kernel is bound by how many loads
// are in flight: more lanes per channel where rows are long (a 2048-channel projection would
// otherwise fill an eighth of the GPU's warps), and two runs a thread issued before either is used.
// kRows: the rows of A a kernel holds accumulators for (1, or kGemvMaxRows); one row fits 64
// registers, so eight blocks (half the warps) fit an SM.
template <typename T, int BITS, bool ZP, bool F8, int kLanes, int kRows>
__global__ void __launch_bounds__(kGemvThreads, kRows == 1 ? 8 : 3)
    gemv_kernel(Format f, const T* a, int rows, const uint8_t* packed, bool aligned, bool a_vec, const T* scales,
                const uint8_t* zeros, const T* bias, T* y) {
  constexpr int kPer = BITS == 8 ? 16 : 32;
  constexpr int kCh = kGemvChannels;
  constexpr int kGroups = kGemvThreads / kLanes;  // channel groups a block
  const int t = threadIdx.x % kLanes;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * kGroups + threadIdx.x / kLanes) * kCh;
  float acc[kCh][kRows] = {};
#pragma unroll 2
  for (int64_t byte0 = static_cast<int64_t>(t) * 16; byte0 < f.row_bytes; byte0 += kLanes * 16) {
    const int64_t k0 = BITS == 8 ? byte0 : byte0 * 2;
    uint4 codes[kCh];
    float s[kCh][2], z[kCh][2];
#pragma unroll
    for (int ch = 0; ch < kCh; ++ch) {
      const int64_t c = c0 + ch < f.n ? c0 + ch : f.n - 1;  // a spare channel repeats the last, unwritten
      codes[ch] = load_codes(packed + c * f.row_bytes, byte0, f.row_bytes, aligned);
      if constexpr (BITS == 8) {
        s[ch][0] = s[ch][1] = static_cast<float>(to_acc(scales[c])) * (F8 ? kFp8Unit : 1.f);
        z[ch][0] = z[ch][1] = ZP ? static_cast<float>(reinterpret_cast<const int8_t*>(zeros)[c]) : 0.f;
      } else {
        const int64_t g0 = c * f.groups + k0 / f.group;
        const int64_t g1 = f.group >= 32 || k0 + 16 >= f.k ? g0 : g0 + 1;
        s[ch][0] = static_cast<float>(to_acc(scales[g0]));
        s[ch][1] = static_cast<float>(to_acc(scales[g1]));
        z[ch][0] = static_cast<float>(zeros[g0]);
        z[ch][1] = static_cast<float>(zeros[g1]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows) break;
      float av[kPer];
      load_run<T, kPer>(a + r * f.k + k0, f.k - k0, a_vec, av);
      float sa[2] = {0.f, 0.f};
#pragma unroll
      for (int i = 0; i < kPer; ++i) sa[i >= kPer / 2] += av[i];
#pragma unroll
      for (int ch = 0; ch < kCh; ++ch) {
        const uint32_t* w = reinterpret_cast<const uint32_t*>(&codes[ch]);
        float d[2] = {0.f, 0.f};
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const uint32_t byte = w[i / 4] >> (8 * (i % 4));
          if constexpr (BITS == 8) {
            d[i >= 8] += av[i] * (F8 ? fp8_value(byte) : int8_code(byte));
          } else {
            d[i >= 8] += av[2 * i] * nibble(byte) + av[2 * i + 1] * nibble(byte >> 4);
          }
        }
        acc[ch][r] += s[ch][0] * (d[0] - z[ch][0] * sa[0]) + s[ch][1] * (d[1] - z[ch][1] * sa[1]);
      }
    }
  }
  // Each warp sums its lanes; with more than one warp a channel group, the warps' sums meet in
  // shared memory and the group's first kCh x rows threads add them up.
  constexpr int kWarps = kLanes / 32;
  __shared__ float partial[kGemvThreads / 32][kCh][kRows];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int ch = 0; ch < kCh; ++ch)
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows) break;
      float v = acc[ch][r];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      acc[ch][r] = v;
      if (kWarps > 1 && lane == 0) partial[warp][ch][r] = v;
    }
  auto write = [&](int ch, int r, float v) {
    const int64_t c = c0 + ch;
    if (c < f.n) y[r * f.n + c] = from_acc<T>(v + (bias ? static_cast<float>(to_acc(bias[c])) : 0.f));
  };
  if constexpr (kWarps == 1) {
    if (lane == 0)
#pragma unroll
      for (int ch = 0; ch < kCh; ++ch)
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          if (r < rows) write(ch, r, acc[ch][r]);
  } else {
    __syncthreads();
    if (t < kCh * rows) {
      const int ch = t / rows, r = t % rows, first = warp - warp % kWarps;
      float v = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) v += partial[first + w][ch][r];
      write(ch, r, v);
    }
  }
}

constexpr int kTile = 64, kTileK = 32, kThreads = 256;

// W[c][k] dequantized (k < K); 8-bit zero points (int8 [N]) where `zeros` is set.
template <typename T>
__device__ __forceinline__ float weight_at(const Format& f, const uint8_t* packed, const T* scales,
                                           const uint8_t* zeros, int64_t c, int64_t k) {
  if (f.fp8) return fp8_value(packed[c * f.row_bytes + k]) * kFp8Unit * static_cast<float>(to_acc(scales[c]));
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
      ((wf.bits == 4 || ctx.has_input(3)) && (wf.fp8 || !is(3, wf.zero_dtype(), wf.zero_dims()))) ||
      (ctx.has_input(4) && (ctx.input(4).dtype != a.dtype || ctx.input(4).numel() != wf.n)))
    return ctx.error("the weights do not have the dims and types that bits / group / K / N give");
  if (a.dims.empty() || a.dims.back() != wf.k) return ctx.error("A " + dims_to_string(a.dims) + " must end in K");
  if (ctx.output(0).numel() != a.numel() / wf.k * wf.n) return ctx.error("output does not have A's rows and N columns");
  const Format f{wf.bits, wf.group, wf.k, wf.n, wf.row_bytes(), wf.groups(), wf.fp8};
  const int64_t m = a.numel() / wf.k;
  if (m == 0) return ok_status();
  const auto* packed = static_cast<const uint8_t*>(ctx.input(1).data);
  const uint8_t* zeros = ctx.has_input(3) ? ctx.input(3).as<const uint8_t>() : nullptr;
  return cuda_dispatch<ops::kFloats>(a.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* bias = ctx.has_input(4) ? ctx.input(4).as<const T>() : nullptr;
    const T* scales = ctx.input(2).as<const T>();
    if (m <= kGemvMaxRows) {
      const bool aligned = f.row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(packed) % 16 == 0;
      const bool a_vec = reinterpret_cast<uintptr_t>(a.data) % 16 == 0 && (f.k * sizeof(T)) % 16 == 0;
      // Threads a channel group: about two 16-byte runs each, one to four warps.
      const int64_t runs = (f.row_bytes + 15) / 16;
      const int lanes = runs <= 64 ? 32 : runs <= 128 ? 64 : 128;
      const int64_t groups = (f.n + kGemvChannels - 1) / kGemvChannels;
      const auto grid = static_cast<unsigned>((groups * lanes + kGemvThreads - 1) / kGemvThreads);
      auto launch = [&]<int BITS, bool ZP, bool F8>() {
        auto go = [&](auto kernel) {
          kernel<<<grid, kGemvThreads, 0, ctx.stream()>>>(f, a.as<const T>(), static_cast<int>(m), packed, aligned,
                                                          a_vec, scales, zeros, bias, ctx.output(0).as<T>());
        };
        // One row (a decode step) in a kernel of its own: the accumulators of eight rows take
        // registers that would otherwise hold more warps, and a GEMV is bound by loads in flight.
        if (m == 1) {
          if (lanes == 32) go(gemv_kernel<T, BITS, ZP, F8, 32, 1>);
          else if (lanes == 64) go(gemv_kernel<T, BITS, ZP, F8, 64, 1>);
          else go(gemv_kernel<T, BITS, ZP, F8, 128, 1>);
        } else if (lanes == 32) go(gemv_kernel<T, BITS, ZP, F8, 32, kGemvMaxRows>);
        else if (lanes == 64) go(gemv_kernel<T, BITS, ZP, F8, 64, kGemvMaxRows>);
        else go(gemv_kernel<T, BITS, ZP, F8, 128, kGemvMaxRows>);
      };
      if (f.bits == 4) launch.template operator()<4, true, false>();
      else if (f.fp8) launch.template operator()<8, false, true>();
      else if (zeros) launch.template operator()<8, true, false>();
      else launch.template operator()<8, false, false>();
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
