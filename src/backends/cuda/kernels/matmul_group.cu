// MatMulGroup on CUDA (ops/matmul_group.h). One to eight rows of float16 / bfloat16 (decode tokens):
// one launch of the GEMV or the few-row kernel (half_gemv.h) over every weight, normalizing A as it
// stages it, gating or rotating Q and K in its epilogue. More rows, or float32: what the unfused steps ran, one after the other — the
// RMSNormalization kernel into the scratch output, a cuBLASLt GEMM a weight (each with its own
// timed algorithm: builder::lt_algo_attr), and the gate kernel over the two products (in the
// scratch after the normalized rows). Where the build timed it faster ("__group_gemm",
// builder/tactics.h), the GEMMs and the gate are one launch of the group GEMM (group_gemm.h). Products
// with rotary tables (Q and K, builder/fold_group_rotaries.cc) are rotated in the group GEMM's
// epilogue, or in place after the other paths' products (kernels/rotary.h).
#include "backends/cuda/cuda_run_options.h"
#include "backends/cuda/kernels/gate.h"
#include "backends/cuda/kernels/gemm.h"
#include "backends/cuda/kernels/group_gemm.h"
#include "backends/cuda/kernels/half_gemv.h"
#include "backends/cuda/kernels/rms_norm.h"
#include "backends/cuda/kernels/rotary.h"
#include "builder/tactics.h"
#include "ops/matmul_group.h"

namespace streamrt::cuda {
namespace {

using ops::kMatMulGroupBias;
using ops::kMatMulGroupRotary;
using ops::kMatMulGroupScale;
using ops::kMatMulGroupWeight;

const void* bias_of(const CudaKernelContext& ctx, const ops::MatMulGroupLayout& l, int i) {
  return l.bias[static_cast<size_t>(i)] ? ctx.input(kMatMulGroupBias + static_cast<size_t>(i)).data : nullptr;
}

// Each weight's operands, in the Part ({w, bias, y, n}) of the GEMV or the group GEMM: with the
// gate, part 0 writes the step's one output and part 1 writes nothing.
template <class Part>
void set_parts(const CudaKernelContext& ctx, const ops::MatMulGroupLayout& l, std::array<Part, 3>& part) {
  for (int i = 0; i < l.count; ++i) {
    const size_t ui = static_cast<size_t>(i);
    void* y = l.gate ? (i == 0 ? ctx.output(0).data : nullptr) : ctx.output(ui).data;
    part[ui] = {ctx.input(kMatMulGroupWeight + ui).data, bias_of(ctx, l, i), y, l.n[ui]};
  }
}

// The products' rotations after a path that does not rotate them.
Status rotate_products(CudaKernelContext& ctx, const ops::MatMulGroupLayout& l) {
  std::vector<RotaryRows> parts;
  for (size_t i = 0; i < l.rotary.size(); ++i) {
    if (!l.rotary[i]) continue;
    parts.push_back({ctx.output(i).data, ctx.input(kMatMulGroupRotary + 2 * i).data,
                     ctx.input(kMatMulGroupRotary + 2 * i + 1).data, l.rows, l.n[i], l.rotary_dim, l.table_rows[i]});
  }
  return parts.empty() ? ok_status() : rotate_rows(ctx.resources(), ctx.input(0).dtype, parts);
}

// The one- to eight-row products, rotating Q and K in their epilogue where the kernel's blocks
// hold whole heads, else after them (rotate_products); kUnsupported when they do not take these
// operands.
Status run_gemv(CudaKernelContext& ctx, const ops::MatMulGroupLayout& l) {
  HalfGemv g;
  g.dtype = ctx.input(0).dtype;
  g.rows = l.rows;
  g.k = l.k;
  g.a = ctx.input(0).data;
  if (l.norm) g.norm_scale = ctx.input(kMatMulGroupScale).data, g.eps = l.epsilon;
  g.parts = l.count;
  g.gate = l.gate;
  set_parts(ctx, l, g.part);
  const int cc = ctx.resources().cc_major;
  HalfGemv rotating = g;
  for (size_t i = 0; i < l.rotary.size(); ++i) {
    if (!l.rotary[i]) continue;
    rotating.rotary_dim = l.rotary_dim;
    rotating.part[i].cos = ctx.input(kMatMulGroupRotary + 2 * i).data;
    rotating.part[i].sin = ctx.input(kMatMulGroupRotary + 2 * i + 1).data;
    rotating.part[i].table_rows = l.table_rows[i];
  }
  if (rotating.rotary_dim > 0 && half_gemv_applies(rotating, cc)) return half_gemv(ctx.resources(), rotating);
  if (!half_gemv_applies(g, cc)) return unsupported("the GEMV does not take these operands");
  SRT_RETURN_IF_ERROR(half_gemv(ctx.resources(), g));
  return rotate_products(ctx, l);
}

// Every product (or the gate) of `x` in one group GEMM launch of `cols` accumulator columns (0: its
// default); kUnsupported when it does not take them.
Status run_group_gemm(CudaKernelContext& ctx, const ops::MatMulGroupLayout& l, const void* x, int cols) {
  GroupGemm g;
  g.dtype = ctx.input(0).dtype;
  g.rows = l.rows;
  g.k = l.k;
  g.x = x;
  g.parts = l.count;
  g.gate = l.gate;
  g.cols = cols;
  set_parts(ctx, l, g.part);
  g.rotary_dim = l.rotary_dim;
  for (size_t i = 0; i < l.rotary.size(); ++i) {
    if (!l.rotary[i]) continue;
    g.part[i].cos = ctx.input(kMatMulGroupRotary + 2 * i).data;
    g.part[i].sin = ctx.input(kMatMulGroupRotary + 2 * i + 1).data;
    g.part[i].table_rows = l.table_rows[i];
  }
  return group_gemm(g, ctx.resources(), ctx.stream());  // kUnsupported, nothing enqueued, where it does not apply
}

// Normalization, GEMMs, gate, as separate launches (or the group GEMM after the normalization).
Status run_steps(CudaKernelContext& ctx, const ops::MatMulGroupLayout& l) {
  const DataType t = ctx.input(0).dtype;
  const size_t es = dtype_size(t);
  uint8_t* scratch = nullptr;
  if (l.has_scratch()) {
    const ops::TensorRef& s = ctx.output(l.products());
    if (s.numel() < l.scratch_elements())
      return ctx.error("scratch of " + std::to_string(s.numel()) + " elements, expected " +
                       std::to_string(l.scratch_elements()));
    scratch = s.as<uint8_t>();
  }
  const void* x = ctx.input(0).data;
  if (l.norm) {
    SRT_RETURN_IF_ERROR(rms_norm_rows(ctx.stream(), t, x, ctx.input(kMatMulGroupScale).data, l.k, scratch, l.rows, l.k,
                                      l.epsilon));
    x = scratch;
  }
  const GroupGemmKernel kernel = current_run_options().group_gemm_kernel;
  const int cols = kernel == GroupGemmKernel::kAuto ? builder::step_group_gemm_cols(ctx.node(), l.rows) : 0;
  if (kernel == GroupGemmKernel::kGroup || cols > 0) {
    Status st = run_group_gemm(ctx, l, x, cols);
    if (st.code() != StatusCode::kUnsupported) return st;
  }
  uint8_t* products = scratch + (l.norm ? l.rows * l.k * static_cast<int64_t>(es) : 0);
  for (int i = 0; i < l.count; ++i) {
    const size_t ui = static_cast<size_t>(i);
    void* y = l.gate ? products + i * l.rows * l.n[0] * static_cast<int64_t>(es) : ctx.output(ui).data;
    Matmul2d m{t, l.rows, l.k, l.n[ui], x, ctx.input(kMatMulGroupWeight + ui).data, bias_of(ctx, l, i), y};
    SRT_RETURN_IF_ERROR(matmul_2d(ctx.resources(), LtStepTactics(ctx.node(), i), m));
  }
  if (l.gate)
    SRT_RETURN_IF_ERROR(swiglu_gate(ctx.stream(), t, ctx.output(0).data, products,
                                    products + l.rows * l.n[0] * static_cast<int64_t>(es), l.rows * l.n[0]));
  return rotate_products(ctx, l);
}

Status matmul_group_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ops::MatMulGroupLayout l, ops::matmul_group_kernel_layout(ctx));
  if (l.rows == 0) return ok_status();
  if (l.k == 0) return ctx.unsupported("K = 0");
  // One to eight rows take the GEMV / few-row kernel unless the build timed the many-row path faster
  // ("__few_row", builder/tactics.h: an LM head whose weights cuBLASLt reads faster).
  if (half_gemv_rows(ctx.input(0).dtype, l.rows) && builder::step_few_row_kernel(ctx.node(), l.rows)) {
    const Status st = run_gemv(ctx, l);
    if (st.code() != StatusCode::kUnsupported) return st.with_context(ctx.node().describe());
  }
  return run_steps(ctx, l).with_context(ctx.node().describe());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(MatMulGroup, "MatMulGroup", matmul_group_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda
