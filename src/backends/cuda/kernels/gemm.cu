// Gemm and MatMul on CUDA. Float types go through cuBLASLt (blas/lt_matmul.h, float32
// accumulation); int32 / int64 through a small tiled kernel that wraps like the CPU's
// naive_gemm. The tiled kernel (accumulating in float) is also the fallback for a float GEMM
// cuBLASLt finds no algorithm for. Semantics mirror src/ops/gemm.cc and src/ops/matmul.cc; the
// cuBLASLt calls come from blas/gemm_problem.h (shared with the build-time tuner) and use the
// step's recorded tactics (TF32, algorithm: LtStepTactics). A MatMul's fused bias (ops/matmul.h)
// goes to the cuBLASLt bias epilogue, else a small kernel adds it after the GEMM. A half-precision
// MatMul of one row by one 2-D B (a batch-1 decode step) runs the GEMV of half_gemv.h instead.
#include <type_traits>

#include "backends/cuda/blas/gemm_problem.h"
#include "backends/cuda/kernels/cuda_types.cuh"
#include "backends/cuda/kernels/gemm.h"
#include "backends/cuda/kernels/half_gemv.h"
#include "builder/tactics.h"
#include "ops/gemm.h"
#include "ops/matmul.h"

namespace streamrt::cuda {
namespace {

constexpr int kMaxBatchRank = 8;
constexpr int kTile = 16;

// Output batch index -> matrix index into A and B (numpy broadcast over the batch dims).
struct BatchMap {
  int rank = 0;
  int64_t dims[kMaxBatchRank] = {};
  int64_t sa[kMaxBatchRank] = {};  // strides in matrices; 0 on broadcast axes
  int64_t sb[kMaxBatchRank] = {};
};

struct TiledGemmArgs {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  int64_t a_mat = 0, b_mat = 0, d_mat = 0;  // elements per matrix
  int64_t batch = 1;
  double alpha = 1.0, beta = 0.0;  // Gemm's scales (beta 0: D is not read)
};

// Integers accumulate in the unsigned type (wrapping like the CPU's two's-complement
// arithmetic), floats in float.
template <typename T, bool = std::is_integral_v<T>> struct TileAcc { using type = float; };
template <typename T> struct TileAcc<T, true> { using type = std::make_unsigned_t<T>; };
template <typename T>
using tile_acc_t = typename TileAcc<T>::type;
template <typename T>
using tile_t = std::conditional_t<std::is_integral_v<T>, T, float>;

// The CPU's epilogues: naive_gemm's for integers (stays in T when the scales are trivial),
// sgemm's alpha * acc + beta * C for floats.
template <typename T>
__device__ T gemm_epilogue(tile_acc_t<T> sum, T old, double alpha, double beta) {
  if constexpr (std::is_integral_v<T>) {
    const T acc = static_cast<T>(sum);
    if (beta == 0.0) return alpha == 1.0 ? acc : static_cast<T>(alpha * static_cast<double>(acc));
    if (alpha == 1.0 && beta == 1.0) return static_cast<T>(acc + old);
    return static_cast<T>(alpha * static_cast<double>(acc) + beta * static_cast<double>(old));
  } else {
    float v = static_cast<float>(alpha) * sum;
    if (beta != 0.0) v += static_cast<float>(beta) * to_acc(old);
    return from_acc<T>(v);
  }
}

// D[z] = alpha * op(A[za]) * op(B[zb]) (+ beta * D[z]) per batch z; a 16x16 output tile per
// block, K in 16-wide steps.
template <typename T>
__global__ void tiled_gemm_kernel(const T* a, const T* b, T* d, TiledGemmArgs g, BatchMap bm) {
  using Acc = tile_acc_t<T>;
  using S = tile_t<T>;
  __shared__ S ta[kTile][kTile];
  __shared__ S tb[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t tiles_m = (g.m + kTile - 1) / kTile;
  const int64_t col = blockIdx.x * int64_t(kTile) + tx;
  for (int64_t z = blockIdx.z; z < g.batch; z += gridDim.z) {
    int64_t oa = 0, ob = 0, rem = z;
    for (int ax = bm.rank - 1; ax >= 0; --ax) {
      const int64_t i = rem % bm.dims[ax];
      rem /= bm.dims[ax];
      oa += i * bm.sa[ax];
      ob += i * bm.sb[ax];
    }
    const T* pa = a + oa * g.a_mat;
    const T* pb = b + ob * g.b_mat;
    T* pd = d + z * g.d_mat;
    for (int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
      const int64_t row = tm * kTile + ty;
      Acc acc = 0;
      for (int64_t p0 = 0; p0 < g.k; p0 += kTile) {
        const int64_t pa_k = p0 + tx, pb_k = p0 + ty;
        ta[ty][tx] = row < g.m && pa_k < g.k ? S(to_acc(g.ta ? pa[pa_k * g.lda + row] : pa[row * g.lda + pa_k])) : S(0);
        tb[ty][tx] = pb_k < g.k && col < g.n ? S(to_acc(g.tb ? pb[col * g.ldb + pb_k] : pb[pb_k * g.ldb + col])) : S(0);
        __syncthreads();
        for (int q = 0; q < kTile; ++q) acc += static_cast<Acc>(ta[ty][q]) * static_cast<Acc>(tb[q][tx]);
        __syncthreads();
      }
      if (row < g.m && col < g.n) {
        T& out = pd[row * g.ldd + col];
        out = gemm_epilogue<T>(acc, g.beta == 0.0 ? from_acc<T>(0) : out, g.alpha, g.beta);
      }
    }
  }
}

template <typename T>
Status launch_tiled_gemm(cudaStream_t stream, const T* a, const T* b, T* d, const TiledGemmArgs& g,
                         const BatchMap& bm) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return ok_status();
  const int64_t tiles_n = (g.n + kTile - 1) / kTile, tiles_m = (g.m + kTile - 1) / kTile;
  if (tiles_n > INT32_MAX) return unsupported("tiled GEMM with " + std::to_string(g.n) + " columns");
  dim3 grid(static_cast<unsigned>(tiles_n), static_cast<unsigned>(std::min<int64_t>(tiles_m, 65535)),
            static_cast<unsigned>(std::min<int64_t>(g.batch, 65535)));
  tiled_gemm_kernel<T><<<grid, dim3(kTile, kTile), 0, stream>>>(a, b, d, g, bm);
  SRT_CUDA_LAUNCH("tiled_gemm_kernel");
  return ok_status();
}

// y[i, j] = c[i * s0 + j * s1] (Gemm's C broadcast to M x N).
template <typename T>
__global__ void broadcast_2d_kernel(const T* c, T* y, int64_t m, int64_t n, int64_t s0, int64_t s1) {
  const int64_t total = m * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = c[(i / n) * s0 + (i % n) * s1];
}

// y = beta * y, or 0 when beta is 0 (the CPU's k == 0 GEMM).
template <typename T>
__global__ void scale_kernel(T* y, int64_t total, float beta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_acc<T>(beta == 0.f ? 0.f : beta * to_acc(y[i]));
}

// ---------------------------------------------------------------------------------------
// Gemm


// Gemm by the tiled kernel; Y already holds C broadcast when has_c.
template <typename T>
Status gemm_tiled(CudaKernelContext& ctx, const ops::GemmAttrs& at, int64_t m, int64_t n, int64_t k, bool has_c) {
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  TiledGemmArgs g;
  g.ta = at.trans_a, g.tb = at.trans_b;
  g.m = m, g.n = n, g.k = k;
  g.lda = a.dims[1], g.ldb = b.dims[1], g.ldd = n;
  g.alpha = at.alpha;
  g.beta = has_c ? at.beta : 0.0;
  return launch_tiled_gemm<T>(ctx.stream(), a.as<const T>(), b.as<const T>(), ctx.output(0).as<T>(), g, BatchMap{})
      .with_context(ctx.node().describe());
}

// Float Gemm: the bias epilogue for a row-vector C with beta 1, else C copied into Y and
// accumulated with beta (cuBLASLt in place).
template <typename T>
Status gemm_float(CudaKernelContext& ctx, const ops::GemmAttrs& at, const GemmShape& s) {
  const ops::TensorRef& a = ctx.input(0);
  const ops::TensorRef& b = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  const int64_t m = s.m, n = s.n, k = s.k;
  T* py = y.as<T>();
  const T* pc = s.has_c ? ctx.input(2).as<const T>() : nullptr;
  if (m == 0 || n == 0) return ok_status();
  if (k == 0) {
    if (!s.has_c) {
      SRT_CUDA(cudaMemsetAsync(py, 0, y.nbytes(), ctx.stream()));
      return ok_status();
    }
    broadcast_2d_kernel<T><<<grid_for(m * n), 256, 0, ctx.stream()>>>(pc, py, m, n, s.cs[0], s.cs[1]);
    SRT_CUDA_LAUNCH("broadcast_2d_kernel");
    scale_kernel<T><<<grid_for(m * n), 256, 0, ctx.stream()>>>(py, m * n, at.beta);
    SRT_CUDA_LAUNCH("scale_kernel");
    return ok_status();
  }
  const LtStepTactics tactics(ctx.node());
  LtGemm g = gemm_gemm(at, a.dims, b.dims, s, a.dtype);
  g.a = a.data;
  g.b = b.data;
  g.d = py;
  if (s.has_c) {
    if (gemm_bias_epilogue(at, s)) {
      g.bias = pc;
      tactics.apply(g);
      Status st = lt_matmul(ctx.resources(), g);
      if (st.code() != StatusCode::kUnsupported) return st.with_context(ctx.node().describe());
      g.bias = nullptr;  // no epilogue algorithm: the general path below
    }
    broadcast_2d_kernel<T><<<grid_for(m * n), 256, 0, ctx.stream()>>>(pc, py, m, n, s.cs[0], s.cs[1]);
    SRT_CUDA_LAUNCH("broadcast_2d_kernel");
    g.beta = at.beta;
  }
  tactics.apply(g);
  Status st = lt_matmul(ctx.resources(), g);
  if (st.code() == StatusCode::kUnsupported) return gemm_tiled<T>(ctx, at, m, n, k, s.has_c);
  return st.with_context(ctx.node().describe());
}

template <typename T>
Status gemm_int(CudaKernelContext& ctx, const ops::GemmAttrs& at, const GemmShape& s) {
  if (s.has_c && s.m * s.n > 0) {
    broadcast_2d_kernel<T><<<grid_for(s.m * s.n), 256, 0, ctx.stream()>>>(ctx.input(2).as<const T>(),
                                                                            ctx.output(0).as<T>(), s.m, s.n, s.cs[0],
                                                                            s.cs[1]);
    SRT_CUDA_LAUNCH("broadcast_2d_kernel");
  }
  return gemm_tiled<T>(ctx, at, s.m, s.n, s.k, s.has_c);
}

Status gemm_cuda(CudaKernelContext& ctx) {
  const ir::Node& node = ctx.node();
  SRT_ASSIGN_OR_RETURN(ops::GemmAttrs at, ops::read_gemm_attrs(node));
  const ops::TensorRef& a = ctx.input(0);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != a.dtype)
      return ctx.error("input " + std::to_string(i) + " has type " + dtype_name(ctx.input(i).dtype) +
                       ", expected " + dtype_name(a.dtype));
  SRT_ASSIGN_OR_RETURN(GemmShape s, gemm_shape(node, at, a.dims, ctx.input(1).dims,
                                               ctx.has_input(2) ? &ctx.input(2).dims : nullptr));
  if (ctx.output(0).dims != Dims{s.m, s.n})
    return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims) + ", expected " +
                     dims_to_string({s.m, s.n}));
  return cuda_dispatch<ops::kFloats | ops::kSignedInts>(a.dtype, node.describe(), [&]<typename T>() -> Status {
    if constexpr (std::is_same_v<T, int8_t>) return ctx.unsupported("int8 Gemm is not supported");
    else if constexpr (std::is_integral_v<T>) return gemm_int<T>(ctx, at, s);
    else return gemm_float<T>(ctx, at, s);
  });
}

// ---------------------------------------------------------------------------------------
// MatMul

// y[i] += x[i % period]: a fused bias (period n) or residual (period: all of y) that no epilogue
// added. Like the CPU's unfused Add: on the narrowed product, in float.
template <typename T>
__global__ void add_into_kernel(T* y, const T* x, int64_t total, int64_t period) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_acc<T>(to_acc(y[i]) + to_acc(x[i % period]));
}

template <typename T>
Status add_into(cudaStream_t stream, T* y, const T* x, int64_t total, int64_t period) {
  if (total == 0 || period == 0) return ok_status();
  add_into_kernel<T><<<grid_for(total), 256, 0, stream>>>(y, x, total, period);
  SRT_CUDA_LAUNCH("add_into_kernel");
  return ok_status();
}

// What a MatMul adds to its product (ops/matmul.h), and what the GEMM call took in.
struct Fused {
  const void* bias = nullptr;
  const void* residual = nullptr;
  bool bias_added = false, residual_added = false;
};

// Float MatMul through cuBLASLt (the calls of matmul_gemm). Where the call is one GEMM (batch 1,
// as the tuner times it) a fused residual is its C operand (beta 1) and a fused bias goes to the
// bias epilogue, tried first; f says what was added. kUnsupported: no algorithm.
Status matmul_lt(CudaResources& res, const LtStepTactics& tactics, const MatMulShape& s, DataType dtype, const void* a,
                 const void* b, void* y, Fused& f) {
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  if (dims_numel(s.batch) == 0 || s.m == 0 || s.n == 0) return ok_status();
  if (s.k == 0) {
    const size_t bytes = static_cast<size_t>(dims_numel(s.out) * esize);
    if (f.residual) SRT_CUDA(cudaMemcpyAsync(y, f.residual, bytes, cudaMemcpyDeviceToDevice, res.stream));
    else SRT_CUDA(cudaMemsetAsync(y, 0, bytes, res.stream));
    f.residual_added = f.residual != nullptr;
    return ok_status();
  }
  MatMulGemm mg = matmul_gemm(s, dtype);
  LtGemm& g = mg.g;
  g.a = a;
  g.b = b;
  g.d = y;
  if (f.residual && !mg.per_matrix && g.batch == 1) {
    g.c = f.residual;
    g.beta = 1.f;
  }
  if (f.bias && !mg.per_matrix && g.batch == 1) {
    g.bias = f.bias;
    tactics.apply(g);
    Status st = lt_matmul(res, g);
    if (st.code() != StatusCode::kUnsupported) {
      f.bias_added = st.ok();
      f.residual_added = st.ok() && g.c;
      return st;
    }
    g.bias = nullptr;  // no epilogue algorithm: the plain GEMM, then add_into
  }
  tactics.apply(g);
  if (!mg.per_matrix) {
    Status st = lt_matmul(res, g);
    f.residual_added = st.ok() && g.c;
    return st;
  }
  Status st;
  ops::for_each_broadcast<2>(s.batch, {s.batch_a, s.batch_b}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    if (!st.ok()) return;
    g.a = static_cast<const uint8_t*>(a) + o[0] * s.m * s.k * esize;
    g.b = static_cast<const uint8_t*>(b) + o[1] * s.k * s.n * esize;
    g.d = static_cast<uint8_t*>(y) + i * s.m * s.n * esize;
    st = lt_matmul(res, g);
  });
  return st;
}

// MatMul by the tiled kernel (integers; floats cuBLASLt has no algorithm for).
template <typename T>
Status matmul_tiled(cudaStream_t stream, const MatMulShape& s, const T* a, const T* b, T* y) {
  if (s.batch.size() > kMaxBatchRank)
    return unsupported("tiled MatMul with " + std::to_string(s.batch.size()) + " batch dims");
  BatchMap bm;
  bm.rank = static_cast<int>(s.batch.size());
  const std::vector<int64_t> sa = ops::broadcast_strides(s.batch_a, s.batch);
  const std::vector<int64_t> sb = ops::broadcast_strides(s.batch_b, s.batch);
  for (int d = 0; d < bm.rank; ++d) bm.dims[d] = s.batch[d], bm.sa[d] = sa[d], bm.sb[d] = sb[d];
  TiledGemmArgs g;
  g.m = s.m, g.n = s.n, g.k = s.k;
  g.lda = s.k, g.ldb = s.n, g.ldd = s.n;
  g.a_mat = s.m * s.k, g.b_mat = s.k * s.n, g.d_mat = s.m * s.n;
  g.batch = dims_numel(s.batch);
  return launch_tiled_gemm<T>(stream, a, b, y, g, bm);
}

// A float MatMul's product and what it fuses: cuBLASLt, the tiled kernel where cuBLASLt has no
// algorithm, then the residual and bias no epilogue added (MatMul steps and matmul_2d).
template <typename T>
Status matmul_float(CudaResources& res, const LtStepTactics& tactics, const MatMulShape& s, DataType dtype,
                    const void* a, const void* b, void* y, Fused f) {
  Status st = matmul_lt(res, tactics, s, dtype, a, b, y, f);
  if (st.code() == StatusCode::kUnsupported)
    st = matmul_tiled<T>(res.stream, s, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y));
  const int64_t total = dims_numel(s.out);
  T* py = static_cast<T*>(y);
  if (st.ok() && f.residual && !f.residual_added) st = add_into<T>(res.stream, py, static_cast<const T*>(f.residual), total, total);
  if (st.ok() && f.bias && !f.bias_added) st = add_into<T>(res.stream, py, static_cast<const T*>(f.bias), total, s.n);
  return st;
}

Status matmul_cuda(CudaKernelContext& ctx) {
  const ops::TensorRef& a = ctx.input(0);
  if (ctx.input(1).dtype != a.dtype) return ctx.error("input types differ");
  SRT_ASSIGN_OR_RETURN(MatMulShape s, matmul_shape(ctx.node(), a.dims, ctx.input(1).dims));
  if (ctx.output(0).dims != s.out)
    return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims) + ", expected " + dims_to_string(s.out));
  SRT_RETURN_IF_ERROR(ops::check_matmul_fused_operands(ctx, s.out));
  Fused f;
  const size_t r = ops::kMatMulResidualInput;
  if (ctx.num_inputs() > 2 && ctx.has_input(2)) f.bias = ctx.input(2).data;
  if (ctx.num_inputs() > r && ctx.has_input(r)) f.residual = ctx.input(r).data;
  const void* b = ctx.input(1).data;
  void* y = ctx.output(0).data;
  const std::string where = ctx.node().describe();
  return cuda_dispatch<ops::kFloats | ops::kSignedInts>(a.dtype, where, [&]<typename T>() -> Status {
    if constexpr (std::is_same_v<T, int8_t>) {
      return ctx.unsupported("int8 MatMul is not supported");
    } else if constexpr (std::is_integral_v<T>) {
      return matmul_tiled<T>(ctx.stream(), s, a.as<const T>(), static_cast<const T*>(b), static_cast<T*>(y))
          .with_context(where);
    } else {
      // One to eight rows: the GEMV / few-row kernel of half_gemv.h, unless the build timed cuBLASLt
      // faster ("__few_row", builder/tactics.h: an LM head).
      const int64_t rows = dims_numel(s.batch) * s.m;
      if (s.batch_b.empty() && s.k > 0 && builder::step_few_row_kernel(ctx.node(), rows)) {
        HalfGemv g;
        g.dtype = a.dtype;
        g.rows = rows;
        g.k = s.k;
        g.a = a.data;
        g.part[0] = {b, f.bias, y, s.n};
        g.residual = f.residual;
        if (half_gemv_applies(g, ctx.resources().cc_major)) {
          Status st = half_gemv(ctx.resources(), g);
          if (st.code() != StatusCode::kUnsupported) return st.with_context(where);
        }
      }
      return matmul_float<T>(ctx.resources(), LtStepTactics(ctx.node()), s, a.dtype, a.data, b, y, f).with_context(where);
    }
  });
}

}  // namespace

Status matmul_2d(CudaResources& res, const LtStepTactics& tactics, const Matmul2d& p) {
  MatMulShape s;
  s.m = p.rows, s.k = p.k, s.n = p.n;
  s.out = {p.rows, p.n};
  Fused f;
  f.bias = p.bias;
  return cuda_dispatch<ops::kFloats>(p.dtype, "matmul_2d", [&]<typename T>() {
    return matmul_float<T>(res, tactics, s, p.dtype, p.a, p.w, p.y, f);
  });
}

STREAMRT_REGISTER_CUDA_KERNEL(Gemm, "Gemm", gemm_cuda, cuda_dtypes(ops::kFloats | ops::kSignedInts));
STREAMRT_REGISTER_CUDA_KERNEL(MatMul, "MatMul", matmul_cuda, cuda_dtypes(ops::kFloats | ops::kSignedInts));

}  // namespace streamrt::cuda
