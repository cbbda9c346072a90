// Reductions on CUDA (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp), mirroring src/ops/reduce.cc (the
// host-side parameter logic is the same code, from ops/reduce.h):
// axes from the attribute or input 1 (a shape input: its host copy), keepdims,
// noop_with_empty_axes; floats accumulate in double, integers in int64 with wrap-around; empty
// reductions give the CPU kernel's identities (0, 1, lowest / highest, -inf, NaN for a float Mean).
//
// No transpose: the input's axes are split into kept and reduced ones (size-1 axes dropped,
// neighbours of the same kind merged), an output index maps to an input offset through the kept
// axes' strides and a reduction index through the reduced axes' strides. When the innermost
// input axis is reduced, a warp (or, for few long rows, a block) cooperates on each output so
// that adjacent lanes read adjacent elements; otherwise one thread per output, adjacent threads
// reading adjacent elements.
#include <cmath>
#include <limits>
#include <optional>

#include "backends/cuda/kernels/norm_util.cuh"
#include "ops/reduce.h"

namespace streamrt::cuda {
namespace {

using norm::StridedSpace;

using ops::Reduce;

// --- device arithmetic (as reduce.cc: integers wrap, NaN wins Max / Min) -------------------

template <typename T>
using racc_t = std::conditional_t<std::is_floating_point_v<acc_t<T>>, double, int64_t>;

__device__ __forceinline__ int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
__device__ __forceinline__ int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
__device__ __forceinline__ int64_t wrap_abs(int64_t a) {
  return a < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(a)) : a;
}
__device__ __forceinline__ double wrap_add(double a, double b) { return a + b; }
__device__ __forceinline__ double wrap_mul(double a, double b) { return a * b; }
__device__ __forceinline__ double wrap_abs(double a) { return fabs(a); }

// Folds one element into an accumulator.
template <Reduce R, typename A>
__device__ __forceinline__ A step(A acc, A v) {
  switch (R) {
    case Reduce::kProd: return wrap_mul(acc, v);
    case Reduce::kMax: return (v > acc || v != v) && acc == acc ? v : acc;  // NaN wins
    case Reduce::kMin: return (v < acc || v != v) && acc == acc ? v : acc;
    case Reduce::kL1: return wrap_add(acc, wrap_abs(v));
    case Reduce::kL2:
    case Reduce::kSumSquare: return wrap_add(acc, wrap_mul(v, v));
    default: return wrap_add(acc, v);  // Sum, Mean, LogSum
  }
}

// Merges two partial accumulators (of the same reduction).
template <Reduce R>
struct Combine {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    switch (R) {
      case Reduce::kProd: return wrap_mul(a, b);
      case Reduce::kMax:
      case Reduce::kMin: return step<R>(a, b);
      default: return wrap_add(a, b);  // sums of elements, of |x|, of x^2, of exp
    }
  }
};

template <Reduce R, typename A>
__device__ __forceinline__ A finish(A acc, int64_t count, double shift) {
  if constexpr (std::is_floating_point_v<A>) {
    switch (R) {
      case Reduce::kMean: return count > 0 ? acc / static_cast<double>(count) : NAN;
      case Reduce::kL2: return sqrt(acc);
      case Reduce::kLogSum: return log(acc);
      case Reduce::kLogSumExp: return log(acc) + shift;
      default: return acc;
    }
  } else {
    if (R == Reduce::kMean) return count > 0 ? acc / count : 0;
    return acc;
  }
}

template <typename T>
__device__ __forceinline__ racc_t<T> load_acc(const T* p) {
  return static_cast<racc_t<T>>(to_acc(*p));
}

template <typename T, typename A>
__device__ __forceinline__ T store_acc(A v) {
  if constexpr (std::is_floating_point_v<A>) return from_acc<T>(static_cast<acc_t<T>>(v));
  else return static_cast<T>(v);
}

// Output index space (kept axes) and per-output reduction space (reduced axes) of the input.
struct Geometry {
  StridedSpace kept;
  StridedSpace reduced;
  int64_t n_out = 0;
  int64_t count = 0;  // elements per output
};

// One thread per output.
template <Reduce R, typename T>
__global__ void reduce_thread(const T* x, T* y, Geometry g, racc_t<T> init) {
  using A = racc_t<T>;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < g.n_out; o += int64_t(gridDim.x) * blockDim.x) {
    const T* xo = x + g.kept.offset(o);
    A acc = init;
    double shift = 0;
    if constexpr (R == Reduce::kLogSumExp) {
      // exp(x - max) never overflows; an infinite max is not subtracted (inf - inf = NaN).
      double mx = -INFINITY;
      for (int64_t r = 0; r < g.count; ++r) mx = norm::MaxOp{}(mx, load_acc(xo + g.reduced.offset(r)));
      shift = isfinite(mx) ? mx : 0.0;
      for (int64_t r = 0; r < g.count; ++r) acc += exp(load_acc(xo + g.reduced.offset(r)) - shift);
    } else {
      for (int64_t r = 0; r < g.count; ++r) acc = step<R>(acc, load_acc(xo + g.reduced.offset(r)));
    }
    y[o] = store_acc<T>(finish<R>(acc, g.count, shift));
  }
}

// A group of threads per output: a warp (kBlock false, several warps per block) or the whole
// block (kBlock true). Outputs are uniform per group, so every lane joins the shuffles.
template <Reduce R, typename T, bool kBlock>
__global__ void reduce_coop(const T* x, T* y, Geometry g, racc_t<T> init) {
  using A = racc_t<T>;
  __shared__ A scratch[32];
  const int lane = kBlock ? threadIdx.x : threadIdx.x % 32;
  const int group = kBlock ? blockDim.x : 32;
  const int64_t per_block = kBlock ? 1 : blockDim.x / 32;
  const int64_t first = blockIdx.x * per_block + (kBlock ? 0 : threadIdx.x / 32);
  auto all_reduce = [&](auto v, auto op) {
    if constexpr (kBlock) return norm::block_all_reduce(v, op, scratch);
    else return norm::warp_all_reduce(v, op);
  };
  for (int64_t o = first; o < g.n_out; o += int64_t(gridDim.x) * per_block) {
    const T* xo = x + g.kept.offset(o);
    A acc = init;
    double shift = 0;
    if constexpr (R == Reduce::kLogSumExp) {
      double mx = -INFINITY;
      for (int64_t r = lane; r < g.count; r += group) mx = norm::MaxOp{}(mx, load_acc(xo + g.reduced.offset(r)));
      mx = all_reduce(mx, norm::MaxOp{});
      shift = isfinite(mx) ? mx : 0.0;
      for (int64_t r = lane; r < g.count; r += group) acc += exp(load_acc(xo + g.reduced.offset(r)) - shift);
      acc = all_reduce(acc, norm::SumOp{});
    } else {
      for (int64_t r = lane; r < g.count; r += group) acc = step<R>(acc, load_acc(xo + g.reduced.offset(r)));
      acc = all_reduce(acc, Combine<R>{});
    }
    if (lane == 0) y[o] = store_acc<T>(finish<R>(acc, g.count, shift));
  }
}

// --- host side -----------------------------------------------------------------------------

template <Reduce R, typename T>
racc_t<T> init_value() {
  return ops::reduce_identity<R, racc_t<T>, T>();
}

// Integer inputs only where reduce.cc accepts them.
template <Reduce R, typename T>
constexpr bool supported() {
  if constexpr (std::is_floating_point_v<acc_t<T>>) return true;
  else if constexpr (std::is_same_v<T, uint8_t>) return R == Reduce::kMax || R == Reduce::kMin;
  else return R != Reduce::kL2 && R != Reduce::kLogSum && R != Reduce::kLogSumExp;
}

enum class Strategy { kThread, kWarp, kBlock };

template <Reduce R, typename T>
Status launch(CudaKernelContext& ctx, const Geometry& g, Strategy how) {
  if constexpr (!supported<R, T>()) {
    return ctx.unsupported(std::string("data type ") + dtype_name(ctx.input(0).dtype) + " is not supported");
  } else {
    const T* x = ctx.input(0).as<const T>();
    T* y = ctx.output(0).as<T>();
    const racc_t<T> init = init_value<R, T>();
    cudaStream_t s = ctx.stream();
    switch (how) {
      case Strategy::kThread:
        reduce_thread<R, T><<<grid_for(g.n_out), 256, 0, s>>>(x, y, g, init);
        SRT_CUDA_LAUNCH("reduce_thread");
        break;
      case Strategy::kWarp:
        reduce_coop<R, T, false><<<grid_for(g.n_out, 8), 256, 0, s>>>(x, y, g, init);
        SRT_CUDA_LAUNCH("reduce_coop (warp per output)");
        break;
      case Strategy::kBlock:
        reduce_coop<R, T, true><<<grid_for(g.n_out, 1), 512, 0, s>>>(x, y, g, init);
        SRT_CUDA_LAUNCH("reduce_coop (block per output)");
        break;
    }
    return ok_status();
  }
}

template <typename T>
Status launch_typed(CudaKernelContext& ctx, Reduce op, const Geometry& g, Strategy how) {
  switch (op) {
    case Reduce::kSum: return launch<Reduce::kSum, T>(ctx, g, how);
    case Reduce::kMean: return launch<Reduce::kMean, T>(ctx, g, how);
    case Reduce::kMax: return launch<Reduce::kMax, T>(ctx, g, how);
    case Reduce::kMin: return launch<Reduce::kMin, T>(ctx, g, how);
    case Reduce::kProd: return launch<Reduce::kProd, T>(ctx, g, how);
    case Reduce::kL1: return launch<Reduce::kL1, T>(ctx, g, how);
    case Reduce::kL2: return launch<Reduce::kL2, T>(ctx, g, how);
    case Reduce::kSumSquare: return launch<Reduce::kSumSquare, T>(ctx, g, how);
    case Reduce::kLogSum: return launch<Reduce::kLogSum, T>(ctx, g, how);
    case Reduce::kLogSumExp: return launch<Reduce::kLogSumExp, T>(ctx, g, how);
  }
  return internal_error("unknown reduction");
}

// The axes list: input 1 (its host copy) or the attribute; nullopt when neither is present.
Result<std::optional<std::vector<int64_t>>> axes_of(const CudaKernelContext& ctx) {
  if (ctx.has_input(1)) {
    const Tensor* v = ctx.host_value(1);
    if (!v) return internal_error(ctx.node().describe() + ": no host copy of the axes input");
    SRT_ASSIGN_OR_RETURN(auto vals, v->to_int64_vector());
    return std::optional<std::vector<int64_t>>(std::move(vals));
  }
  if (ctx.node().has_attr("axes")) {
    SRT_ASSIGN_OR_RETURN(auto vals, ctx.node().attr_ints("axes"));
    return std::optional<std::vector<int64_t>>(std::move(vals));
  }
  return std::optional<std::vector<int64_t>>();
}

// Splits the input's axes into merged kept / reduced groups. Sets *inner_reduced when the
// innermost axis of size > 1 is a reduced one.
Status build_geometry(const CudaKernelContext& ctx, const Dims& dims, const std::vector<bool>& mask, Geometry* g,
                      bool* inner_reduced) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  g->n_out = 1;
  g->count = 1;
  int last_kind = -1;  // 0 kept, 1 reduced: the kind of the previous axis of size > 1
  for (size_t d = 0; d < dims.size(); ++d) {
    (mask[d] ? g->count : g->n_out) *= dims[d];
    if (dims[d] == 1) continue;
    const int kind = mask[d] ? 1 : 0;
    StridedSpace& sp = kind ? g->reduced : g->kept;
    if (kind == last_kind) {
      // Contiguous input: the previous axis of the same group merges with this one.
      sp.dims[sp.rank - 1] *= dims[d];
      sp.strides[sp.rank - 1] = strides[d];
    } else {
      if (sp.rank == norm::kMaxGroups)
        return ctx.unsupported("reduction over input " + dims_to_string(dims) +
                               " alternates kept and reduced axes too often");
      sp.dims[sp.rank] = dims[d];
      sp.strides[sp.rank] = strides[d];
      ++sp.rank;
    }
    last_kind = kind;
  }
  if (g->count == 0) g->reduced = StridedSpace{};  // nothing is read; no division by a zero dim
  *inner_reduced = last_kind == 1;
  return ok_status();
}

Status reduce_cuda(CudaKernelContext& ctx) {
  const ops::ReduceInfo* info = ops::reduce_info(ctx.node().op_type);
  if (!info) return internal_error("not a reduction: " + ctx.node().op_type);
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  if (!ops::reduce_dtype_in(x.dtype, info->types))
    return ctx.unsupported(std::string("data type ") + dtype_name(x.dtype) + " is not supported");
  if (y.dtype != x.dtype)
    return ctx.error(std::string("output type ") + dtype_name(y.dtype) + " differs from the input's");
  // keepdims is not needed: the output was allocated with the right dims; only its element
  // order matters (the attributes are still read, and checked, as on the CPU).
  SRT_ASSIGN_OR_RETURN(ops::ReduceAttrs attrs, ops::reduce_attrs(ctx.node()));
  SRT_ASSIGN_OR_RETURN(auto axes, axes_of(ctx));
  SRT_ASSIGN_OR_RETURN(auto mask, ops::reduced_mask(ctx.node(), axes, static_cast<int64_t>(x.dims.size()),
                                                    attrs.noop_with_empty_axes));
  Geometry g;
  bool inner_reduced = false;
  SRT_RETURN_IF_ERROR(build_geometry(ctx, x.dims, mask, &g, &inner_reduced));
  if (g.n_out != y.numel())
    return ctx.error("output shape " + dims_to_string(y.dims) + " does not match the reduction of " +
                     dims_to_string(x.dims));
  if (g.n_out == 0) return ok_status();
  Strategy how = Strategy::kThread;
  if (inner_reduced && g.count >= 32) {
    const int64_t sms = std::max(ctx.resources().sm_count, 1);
    how = g.count >= 4096 && g.n_out <= 4 * sms ? Strategy::kBlock : Strategy::kWarp;
  }
  return cuda_dispatch<ops::kNumeric>(x.dtype, ctx.node().describe(),
                                      [&]<typename T>() { return launch_typed<T>(ctx, info->op, g, how); });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(ReduceSum, "ReduceSum", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceMean, "ReduceMean", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceMax, "ReduceMax", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceMin, "ReduceMin", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceProd, "ReduceProd", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceL1, "ReduceL1", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceL2, "ReduceL2", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceSumSquare, "ReduceSumSquare", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceLogSum, "ReduceLogSum", reduce_cuda, cuda_dtypes(ops::kNumeric));
STREAMRT_REGISTER_CUDA_KERNEL(ReduceLogSumExp, "ReduceLogSumExp", reduce_cuda, cuda_dtypes(ops::kNumeric));

}  // namespace streamrt::cuda
