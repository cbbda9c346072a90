// Rotary on CUDA, mirroring src/ops/rotary.cc: Y = X * cos + rotate_half(X) * sin over the last
// axis, cos and sin through the broadcast indexer. Where the last axis is a multiple of 16, cos and
// sin are not broadcast along it and every pointer is 16-byte aligned (Llama's heads), a thread
// takes 8 elements of the first half and their 8 partners with one indexer step and 16-byte loads
// (one element a thread, the index arithmetic dominated: a 512-token Llama prefill spent 6 % of its
// GPU time here); else one. A paired step (a layer's Q and K, builder/pair_rotaries.cc) runs both
// rotations in one launch when both take the 16-element path: at 512 tokens each launch is ~4 us
// of mostly fixed cost (ncu, H200), not bandwidth. rotate_rows (rotary.h): a MatMulGroup's products
// rotated in place by row tables, the same arithmetic, 8 elements and their partners a thread where the
// heads are multiples of 16.
#include "backends/cuda/kernels/rotary.h"

#include "backends/cuda/kernels/dependent_launch.cuh"
#include "backends/cuda/kernels/elementwise.cuh"
#include "ops/rotary.h"

namespace streamrt::cuda {
namespace {

template <typename T, typename Idx>
__global__ void rotary_kernel(T* y, const T* x, const T* c, const T* s, Idx n, Idx d, BroadcastIndexer<3> ix) {
  const Idx h = d / 2;
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < n; i += Idx(gridDim.x) * blockDim.x) {
    Idx off[3];
    ix.offsets(i, off);
    const Idx j = i % d;
    const float r = j < h ? -static_cast<float>(to_acc(x[i + h])) : static_cast<float>(to_acc(x[i - h]));
    y[i] = from_acc<T>(static_cast<float>(to_acc(x[i])) * static_cast<float>(to_acc(c[off[1]])) +
                       r * static_cast<float>(to_acc(s[off[2]])));
  }
}

// One rotation of the 16-element path.
template <typename T>
struct VecPart {
  T* y;
  const T *x, *c, *s;
  uint32_t npairs, d;
  BroadcastIndexer<3> ix;
};

// Pair group v of `p`: 8 elements of a row's first half and the 8 they pair with in the second half
// (x read once; the one-element version read each element twice, once for itself and once for its
// partner) with one indexer step for 16 outputs.
template <typename T>
__device__ __forceinline__ void rotate16(const VecPart<T>& p, uint32_t v) {
  const uint32_t h = p.d / 2, per_row = h / 8;
  const uint32_t i = (v / per_row) * p.d + (v % per_row) * 8;  // in the first half
  uint32_t off[3];
  p.ix.offsets(i, off);
  float x1[8], x2[8], c1[8], c2[8], s1[8], s2[8], y1[8], y2[8];
  load8(p.x + i, x1);
  load8(p.x + i + h, x2);
  load8(p.c + off[1], c1);
  load8(p.c + off[1] + h, c2);
  load8(p.s + off[2], s1);
  load8(p.s + off[2] + h, s2);
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    y1[e] = x1[e] * c1[e] - x2[e] * s1[e];
    y2[e] = x2[e] * c2[e] + x1[e] * s2[e];
  }
  store8(p.y + i, y1);
  store8(p.y + i + h, y2);
}

// kParts rotations in one launch: pair groups [0, a.npairs) are a's, the rest b's. Each part is
// named directly (no pointer to a parameter), so the indexers stay in the parameter space.
template <typename T, int kParts>
__global__ void rotary_vec_kernel(const VecPart<T> a, const VecPart<T> b) {
  wait_for_earlier_steps();  // a dependent launch (dependent_launch.cuh)
  dependents_may_start();    // after the wait: one launch ahead at most
  const uint32_t total = a.npairs + (kParts == 2 ? b.npairs : 0u);
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < total; v += gridDim.x * blockDim.x) {
    if (kParts == 1 || v < a.npairs)
      rotate16(a, v);
    else
      rotate16(b, v - a.npairs);
  }
}

// Part k of the step (inputs 3k .. 3k + 2, output k): checked, its indexer built, and whether the
// 16-element path takes it.
template <typename T>
Status make_part(CudaKernelContext& ctx, size_t k, VecPart<T>* part, bool* vec) {
  const ops::TensorRef &x = ctx.input(3 * k), &c = ctx.input(3 * k + 1), &s = ctx.input(3 * k + 2);
  const ops::TensorRef& y = ctx.output(k);
  SRT_RETURN_IF_ERROR(ops::rotary_check_broadcast(ctx.node(), x.dims, c.dims, s.dims));
  const int64_t n = x.numel(), d = x.dims.empty() ? 0 : x.dims.back();
  if (n > 0 && d % 2 != 0) return ctx.error("the last axis of X must be even, got " + std::to_string(d));
  SRT_RETURN_IF_ERROR(make_indexer<3>(ctx, x.dims, {&x.dims, &c.dims, &s.dims}, &part->ix));
  part->y = y.as<T>(), part->x = x.as<const T>(), part->c = c.as<const T>(), part->s = s.as<const T>();
  part->npairs = static_cast<uint32_t>(n / 16), part->d = static_cast<uint32_t>(d);
  *vec = n > 0 && d % 16 == 0 && c.dims.size() > 0 && c.dims.back() == d && s.dims.size() > 0 && s.dims.back() == d &&
         aligned16(x.data) && aligned16(y.data) && aligned16(c.data) && aligned16(s.data) && n < (int64_t{1} << 31);
  return ok_status();
}

// The one-element path for part k.
template <typename T>
Status launch_scalar(CudaKernelContext& ctx, size_t k, const VecPart<T>& part) {
  const int64_t n = ctx.input(3 * k).numel(), d = part.d;
  if (n == 0) return ok_status();
  if (n < (int64_t{1} << 31))
    rotary_kernel<T, uint32_t><<<grid_for(n), 256, 0, ctx.stream()>>>(part.y, part.x, part.c, part.s,
                                                                       static_cast<uint32_t>(n), part.d, part.ix);
  else
    rotary_kernel<T, int64_t><<<grid_for(n), 256, 0, ctx.stream()>>>(part.y, part.x, part.c, part.s, n, d, part.ix);
  SRT_CUDA_LAUNCH("rotary_kernel");
  return ok_status();
}

Status rotary_cuda(CudaKernelContext& ctx) {
  const size_t parts = ops::rotary_parts(ctx.num_inputs(), ctx.num_outputs());
  if (parts == 0) return ctx.error("expected inputs X, cos, sin (and X2, cos2, sin2 with a second output)");
  return cuda_dispatch<ops::kFloats>(ctx.input(0).dtype, ctx.node().describe(), [&]<typename T>() -> Status {
    VecPart<T> part[2] = {};
    bool vec[2] = {false, false};
    for (size_t k = 0; k < parts; ++k) SRT_RETURN_IF_ERROR(make_part<T>(ctx, k, &part[k], &vec[k]));
    if (parts == 2 && vec[0] && vec[1]) {
      return launch_dependent(ctx.resources(), rotary_vec_kernel<T, 2>,
                              dim3(grid_for(int64_t{part[0].npairs} + part[1].npairs)), dim3(256), 0, 1, part[0],
                              part[1]);
    }
    for (size_t k = 0; k < parts; ++k) {
      if (!vec[k]) {
        SRT_RETURN_IF_ERROR(launch_scalar<T>(ctx, k, part[k]));
        continue;
      }
      SRT_RETURN_IF_ERROR(launch_dependent(ctx.resources(), rotary_vec_kernel<T, 1>, dim3(grid_for(part[k].npairs)),
                                           dim3(256), 0, 1, part[k], part[k]));
    }
    return ok_status();
  });
}

// A MatMulGroup's product rotated in place (rotary.h): kV elements of a head's first half and their
// partners a thread, the tables' row r % table_rows.
template <typename T, int kV>
struct RowsPart {
  T* y;
  const T *c, *s;
  int64_t groups;  // rows x heads x d / 2 / kV
  uint32_t heads, d, table_rows;
};

template <typename T, int kV>
__device__ __forceinline__ void load_v(const T* p, float (&out)[kV]) {
  if constexpr (kV == 8) {
    load8(p, out);
  } else {
#pragma unroll
    for (int e = 0; e < kV; ++e) out[e] = static_cast<float>(to_acc(p[e]));
  }
}

template <typename T, int kV>
__device__ __forceinline__ void store_v(T* p, const float (&v)[kV]) {
  if constexpr (kV == 8) {
    store8(p, v);
  } else {
#pragma unroll
    for (int e = 0; e < kV; ++e) p[e] = from_acc<T>(v[e]);
  }
}

template <typename T, int kV>
__device__ __forceinline__ void rotate_row_group(const RowsPart<T, kV>& p, int64_t v) {
  const uint32_t h = p.d / 2, per_head = h / kV;
  const int64_t row_head = v / per_head;
  const uint32_t w = static_cast<uint32_t>(v % per_head) * kV;
  const int64_t row = row_head / p.heads;
  T* x = p.y + row_head * p.d + w;  // row * n + head * d
  const int64_t t = (row % p.table_rows) * p.d + w;
  float a[kV], b[kV], c1[kV], c2[kV], s1[kV], s2[kV], y1[kV], y2[kV];
  load_v<T, kV>(x, a);
  load_v<T, kV>(x + h, b);
  load_v<T, kV>(p.c + t, c1);
  load_v<T, kV>(p.c + t + h, c2);
  load_v<T, kV>(p.s + t, s1);
  load_v<T, kV>(p.s + t + h, s2);
#pragma unroll
  for (int e = 0; e < kV; ++e) {
    y1[e] = a[e] * c1[e] - b[e] * s1[e];
    y2[e] = b[e] * c2[e] + a[e] * s2[e];
  }
  store_v<T, kV>(x, y1);
  store_v<T, kV>(x + h, y2);
}

template <typename T, int kV>
__global__ void rotary_rows_kernel(const RowsPart<T, kV> a, const RowsPart<T, kV> b) {
  wait_for_earlier_steps();  // a dependent launch (dependent_launch.cuh): the products are the step's own
  dependents_may_start();
  const int64_t total = a.groups + b.groups;
  for (int64_t v = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; v < total; v += int64_t{gridDim.x} * blockDim.x) {
    if (v < a.groups)
      rotate_row_group(a, v);
    else
      rotate_row_group(b, v - a.groups);
  }
}

template <typename T, int kV>
RowsPart<T, kV> rows_part(const RotaryRows& r) {
  return {static_cast<T*>(r.y),
          static_cast<const T*>(r.cos),
          static_cast<const T*>(r.sin),
          r.rows * (r.n / r.d) * (r.d / 2 / kV),
          static_cast<uint32_t>(r.n / r.d),
          static_cast<uint32_t>(r.d),
          static_cast<uint32_t>(r.table_rows)};
}

template <typename T, int kV>
Status launch_rows(const CudaResources& res, const RotaryRows& a, const RotaryRows* b) {
  const RowsPart<T, kV> pa = rows_part<T, kV>(a);
  RowsPart<T, kV> pb = b ? rows_part<T, kV>(*b) : pa;
  if (!b) pb.groups = 0;
  if (pa.groups + pb.groups == 0) return ok_status();
  return launch_dependent(res, rotary_rows_kernel<T, kV>, dim3(grid_for(pa.groups + pb.groups)), dim3(256), 0, 1, pa,
                          pb);
}

bool rows_vec(const RotaryRows& r) {
  return r.d % 16 == 0 && aligned16(r.y) && aligned16(r.cos) && aligned16(r.sin);
}

}  // namespace

Status rotate_rows(const CudaResources& res, DataType t, std::span<const RotaryRows> parts) {
  for (const RotaryRows& r : parts)
    if (r.d <= 0 || r.d % 2 != 0 || r.n % r.d != 0 || r.table_rows < 1 || r.rows < 0 || r.n / r.d > UINT32_MAX ||
        r.d > UINT32_MAX || r.table_rows > UINT32_MAX)
      return invalid_argument("rotate_rows: " + std::to_string(r.rows) + " x " + std::to_string(r.n) +
                              " rows do not rotate as heads of " + std::to_string(r.d) + " by " +
                              std::to_string(r.table_rows) + " table rows");
  return cuda_dispatch<ops::kFloats>(t, "rotate_rows", [&]<typename T>() -> Status {
    const bool vec = std::all_of(parts.begin(), parts.end(), rows_vec);
    if (parts.size() == 2 && vec) return launch_rows<T, 8>(res, parts[0], &parts[1]);
    for (const RotaryRows& r : parts) {
      const Status st = rows_vec(r) ? launch_rows<T, 8>(res, r, nullptr) : launch_rows<T, 1>(res, r, nullptr);
      SRT_RETURN_IF_ERROR(st);
    }
    return ok_status();
  });
}

STREAMRT_REGISTER_CUDA_KERNEL(Rotary, "Rotary", rotary_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
