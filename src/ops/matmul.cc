// MatMul: numpy matmul. 1-D operands are promoted (A: [K] -> [1, K], B: [K] -> [K, 1]) and the
// promoted axis is dropped from the result; leading (batch) dims broadcast. Optional third and
// fourth inputs are the builder's fused bias and residual (ops/matmul.h).
#include "ops/matmul.h"

#include "ops/gemm_util.h"

namespace streamrt::ops {

Result<MatMulShape> matmul_shape(const ir::Node& node, const Dims& a, const Dims& b) {
  if (a.empty() || b.empty())
    return node.error(StatusCode::kInvalidModel, "MatMul inputs must have rank >= 1, got " +
                                                     dims_to_string(a) + " and " + dims_to_string(b));
  MatMulShape s;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  s.m = a_vec ? 1 : a[a.size() - 2];
  int64_t ka = a.back();
  int64_t kb = b_vec ? b[0] : b[b.size() - 2];
  s.n = b_vec ? 1 : b.back();
  if (ka >= 0 && kb >= 0 && ka != kb)
    return node.error(StatusCode::kInvalidModel, "inner dimensions differ: A " + dims_to_string(a) +
                                                     ", B " + dims_to_string(b));
  s.k = ka >= 0 ? ka : kb;
  if (!a_vec) s.batch_a.assign(a.begin(), a.end() - 2);
  if (!b_vec) s.batch_b.assign(b.begin(), b.end() - 2);
  auto batch = broadcast_dims(s.batch_a, s.batch_b);
  if (!batch.ok())
    return node.error(StatusCode::kInvalidModel, "batch dims: " + batch.status().message());
  s.batch = *batch;
  s.out = s.batch;
  if (!a_vec) s.out.push_back(s.m);
  if (!b_vec) s.out.push_back(s.n);
  return s;
}

namespace {

bool has_bias(const KernelContext& ctx) { return ctx.num_inputs() > 2 && ctx.has_input(2); }
bool has_residual(const KernelContext& ctx) {
  return ctx.num_inputs() > kMatMulResidualInput && ctx.has_input(kMatMulResidualInput);
}

// The fused bias exists only with "__bias" = 1, the residual only with "__residual" = 1; both
// have A's float type. *bias / *residual: whether they are there.
Status check_fused_inputs(const InferContext& ctx, DataType t, bool* bias, bool* residual) {
  const size_t n = ctx.num_inputs();
  if (n > 4) return ctx.error("MatMul takes at most 4 inputs (A, B, a fused bias and residual), got " + std::to_string(n));
  *bias = n > 2 && ctx.has_input(2);
  *residual = n > kMatMulResidualInput && ctx.has_input(kMatMulResidualInput);
  if (*bias != matmul_has_bias_attr(ctx.node()))
    return ctx.error(*bias ? std::string("a third input, a fused bias, needs the attribute ") + kMatMulBiasAttr + " = 1"
                          : std::string("the fused bias (input 2) is missing"));
  if (*residual != matmul_has_residual_attr(ctx.node()))
    return ctx.error(*residual ? std::string("a fourth input, a fused residual, needs the attribute ") +
                                    kMatMulResidualAttr + " = 1"
                              : std::string("the fused residual (input 3) is missing"));
  for (size_t i : {size_t{2}, kMatMulResidualInput})
    if (i < n && ctx.has_input(i) && (ctx.input_dtype(i) != t || !is_float(t)))
      return ctx.error(std::string("the fused ") + (i == 2 ? "bias" : "residual") + " must have A's float type, got " +
                       dtype_name(ctx.input_dtype(i)) + " with A " + dtype_name(t));
  return ok_status();
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_gemm_input(ctx, 0));
  SRT_RETURN_IF_ERROR(require_gemm_input(ctx, 1));
  DataType t = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != t)
    return ctx.error(std::string("input types differ: ") + dtype_name(t) + " vs " +
                     dtype_name(ctx.input_dtype(1)));
  bool bias = false, residual = false;
  SRT_RETURN_IF_ERROR(check_fused_inputs(ctx, t, &bias, &residual));
  if (!ctx.input(0).has_shape || !ctx.input(1).has_shape) {
    ctx.set_output_unranked(0, t);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(MatMulShape s, matmul_shape(ctx.node(), ctx.input_dims(0), ctx.input_dims(1)));
  if (bias && ctx.input(2).has_shape)
    SRT_RETURN_IF_ERROR(check_matmul_bias(ctx.node(), ctx.input_dims(2), ctx.input_dims(1), s.out.size()));
  if (residual && ctx.input(kMatMulResidualInput).has_shape)
    SRT_RETURN_IF_ERROR(check_matmul_residual(ctx.node(), ctx.input_dims(kMatMulResidualInput), s.out));
  ctx.set_output(0, t, s.out);
  return ok_status();
}

// The fused bias (input 2) added to each of the float result's rows, then the fused residual
// (input 3), before narrowing, as the GPU's epilogue adds them: one rounding for half types
// (float32 gives the unfused graph's bits).
template <typename T>
void add_fused(KernelContext& ctx, float* y, int64_t numel, int64_t n) {
  if (has_bias(ctx)) {
    const T* pb = ctx.input(2).as<T>();
    for (int64_t r = 0, rows = n ? numel / n : 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) y[r * n + j] += static_cast<float>(load(pb[j]));
  }
  if (has_residual(ctx)) {
    const T* pr = ctx.input(kMatMulResidualInput).as<T>();
    for (int64_t i = 0; i < numel; ++i) y[i] += static_cast<float>(load(pr[i]));
  }
}

template <typename T>
Status run_typed(KernelContext& ctx, const MatMulShape& s) {
  const TensorRef& a = ctx.input(0);
  const TensorRef& b = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  const int64_t m = s.m, n = s.n, k = s.k;
  const int64_t batch_b = dims_numel(s.batch_b);
  if constexpr (std::is_integral_v<T>) {
    for_each_broadcast<2>(s.batch, {s.batch_a, s.batch_b}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      naive_gemm<T>(false, false, m, n, k, 1.0, a.as<T>() + o[0] * m * k, k,
                    b.as<T>() + o[1] * k * n, n, 0.0, y.as<T>() + i * m * n, n);
    });
    return ok_status();
  } else {
    FloatView<T> fa(a.as<T>(), a.numel());
    FloatOut<T> fy(y.as<T>(), y.numel());
    auto product = [&](int64_t rows, const float* pa, const T* pb, float* py) {
      return matmul_float_rows<T>(rows, n, k, pa, pb, py);
    };
    Status st;
    if (batch_b == 1) {
      // B is shared by every batch: A's batch rows stack into one tall GEMM.
      st = product(dims_numel(s.batch) * m, fa.get(), b.as<T>(), fy.get());
    } else {
      for_each_broadcast<2>(s.batch, {s.batch_a, s.batch_b}, [&](int64_t i, const std::array<int64_t, 2>& o) {
        if (st.ok()) st = product(m, fa.get() + o[0] * m * k, b.as<T>() + o[1] * k * n, fy.get() + i * m * n);
      });
    }
    if (!st.ok()) return st.with_context(ctx.node().describe());
    add_fused<T>(ctx, fy.get(), y.numel(), n);
    fy.flush();
    return ok_status();
  }
}

Status cpu(KernelContext& ctx) {
  const TensorRef& a = ctx.input(0);
  if (ctx.input(1).dtype != a.dtype) return ctx.error("input types differ");
  SRT_ASSIGN_OR_RETURN(MatMulShape s, matmul_shape(ctx.node(), a.dims, ctx.input(1).dims));
  SRT_RETURN_IF_ERROR(check_matmul_fused_operands(ctx, s.out));
  if (ctx.output(0).dims != s.out)
    return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims) + ", expected " +
                     dims_to_string(s.out));
  return dispatch<kFloats | kSignedInts>(a.dtype, ctx.node().describe(),
                                         [&]<typename T>() { return run_typed<T>(ctx, s); });
}

// 2 M N K for the residency planner: the output's elements times the shared dim (A's last).
double flops(const ir::Node&, std::span<const Dims* const> in, const Dims& out) {
  const Dims* a = cost_input(in, 0);
  if (!a || a->empty()) return 0;
  return 2.0 * estimate_numel(out) * static_cast<double>(std::max<int64_t>(a->back(), 1));
}

bool int_attr_is_one(const ir::Node& node, const char* name) {
  auto it = node.attrs.find(name);
  return it != node.attrs.end() && it->second.kind == ir::Attribute::Kind::kInt && it->second.i == 1;
}

}  // namespace

template <typename T>
Status matmul_float_rows(int64_t rows, int64_t n, int64_t k, const float* a, const T* b, float* y) {
  if constexpr (std::is_same_v<T, float>) {
    return sgemm(false, false, rows, n, k, 1.f, a, k, b, n, 0.f, y, n);
  } else {
    // Half-type B is never widened whole (ops/half_gemm.h): a few rows of A (a decode step)
    // read it as stored; more go through BLAS a widened panel at a time.
    if (rows > kHalfGemmMaxRows) return half_b_sgemm(false, false, rows, n, k, 1.f, a, k, b, n, 0.f, y, n);
    half_b_gemm_rows(false, rows, n, k, a, k, b, n, y, n);
    return ok_status();
  }
}
template Status matmul_float_rows<float>(int64_t, int64_t, int64_t, const float*, const float*, float*);
template Status matmul_float_rows<Half>(int64_t, int64_t, int64_t, const float*, const Half*, float*);
template Status matmul_float_rows<BFloat16>(int64_t, int64_t, int64_t, const float*, const BFloat16*, float*);

bool matmul_has_bias_attr(const ir::Node& node) { return int_attr_is_one(node, kMatMulBiasAttr); }
bool matmul_has_residual_attr(const ir::Node& node) { return int_attr_is_one(node, kMatMulResidualAttr); }

Status check_matmul_residual(const ir::Node& node, const Dims& residual, const Dims& out) {
  bool same = residual.size() == out.size();
  for (size_t i = 0; same && i < out.size(); ++i) same = residual[i] < 0 || out[i] < 0 || residual[i] == out[i];
  if (same) return ok_status();
  return node.error(StatusCode::kInvalidModel,
                    "fused residual " + dims_to_string(residual) + " must have the output's dims " + dims_to_string(out));
}

Status check_matmul_fused_operands(const KernelContext& ctx, const Dims& out) {
  const DataType t = ctx.input(0).dtype;
  if (has_bias(ctx)) {
    if (ctx.input(2).dtype != t || !is_float(t)) return ctx.error("the fused bias must have A's float type");
    SRT_RETURN_IF_ERROR(check_matmul_bias(ctx.node(), ctx.input(2).dims, ctx.input(1).dims, out.size()));
  }
  if (has_residual(ctx)) {
    if (ctx.input(kMatMulResidualInput).dtype != t || !is_float(t))
      return ctx.error("the fused residual must have A's float type");
    SRT_RETURN_IF_ERROR(check_matmul_residual(ctx.node(), ctx.input(kMatMulResidualInput).dims, out));
  }
  return ok_status();
}

Status check_matmul_bias(const ir::Node& node, const Dims& bias, const Dims& b, size_t out_rank) {
  auto bad = [&](const std::string& why) {
    return node.error(StatusCode::kInvalidModel, "fused bias " + dims_to_string(bias) + ": " + why);
  };
  if (b.size() < 2) return bad("needs B of rank >= 2, B is " + dims_to_string(b));
  if (bias.empty() || bias.size() > out_rank)
    return bad("needs rank 1 to " + std::to_string(out_rank) + " (the output's)");
  for (size_t i = 0; i + 1 < bias.size(); ++i)
    if (bias[i] != 1 && bias[i] != kDynamicDim) return bad("must be [1, ..., 1, N]");
  if (bias.back() >= 0 && b.back() >= 0 && bias.back() != b.back())
    return bad("its last dim must be N = " + std::to_string(b.back()));
  return ok_status();
}

STREAMRT_REGISTER_OP(MatMul, {.op_type = "MatMul", .infer = infer, .cpu = cpu,
                              .cpu_dtypes = dtypes(kFloats) | dtype_mask({DataType::kInt32, DataType::kInt64}),
                              .streamable_inputs = {0, 1, 2}, .tf32 = true, .flops = flops});

}  // namespace streamrt::ops
