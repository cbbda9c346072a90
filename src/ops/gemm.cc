// Gemm (opsets 7..13+): Y = alpha * op(A) * op(B) + beta * C, with C (optional from opset 11)
// broadcast unidirectionally to M x N.
#include "ops/gemm.h"
#include "ops/gemm_util.h"

namespace streamrt::ops {

Result<GemmAttrs> read_gemm_attrs(const ir::Node& node) {
  GemmAttrs a;
  SRT_ASSIGN_OR_RETURN(int64_t ta, node.attr_int("transA", 0));
  SRT_ASSIGN_OR_RETURN(int64_t tb, node.attr_int("transB", 0));
  SRT_ASSIGN_OR_RETURN(a.alpha, node.attr_float("alpha", 1.f));
  SRT_ASSIGN_OR_RETURN(a.beta, node.attr_float("beta", 1.f));
  a.trans_a = ta != 0;
  a.trans_b = tb != 0;
  return a;
}

namespace {


bool known(int64_t d) { return d >= 0; }

// Checks that C (rank <= 2) broadcasts to [m, n]; refines unknown m / n from C where C fixes
// them (a C dim > 1 must equal the output dim).
Status check_bias(const ir::Node& node, const Dims& c, int64_t& m, int64_t& n) {
  if (c.size() > 2)
    return node.error(StatusCode::kInvalidModel, "C has rank " + std::to_string(c.size()) +
                                                     ", expected at most 2");
  int64_t* out[2] = {&m, &n};
  for (size_t i = 0; i < c.size(); ++i) {
    int64_t& o = *out[2 - c.size() + i];
    int64_t d = c[i];
    if (!known(d) || d == 1) continue;
    if (!known(o)) o = d;
    else if (d != o)
      return node.error(StatusCode::kInvalidModel, "C of shape " + dims_to_string(c) +
                                                       " does not broadcast to " + std::to_string(m) +
                                                       "x" + std::to_string(n));
  }
  return ok_status();
}

// M, K of op(A) and K, N of op(B); -1 where unknown. Checks ranks and the shared K.
Status matrix_dims(const ir::Node& node, bool a_ranked, const Dims& a, bool b_ranked,
                   const Dims& b, const GemmAttrs& at, int64_t& m, int64_t& n, int64_t& k) {
  if ((a_ranked && a.size() != 2) || (b_ranked && b.size() != 2))
    return node.error(StatusCode::kInvalidModel, "A and B must be 2-D, got " + dims_to_string(a) +
                                                     " and " + dims_to_string(b));
  m = a_ranked ? a[at.trans_a ? 1 : 0] : -1;
  int64_t ka = a_ranked ? a[at.trans_a ? 0 : 1] : -1;
  int64_t kb = b_ranked ? b[at.trans_b ? 1 : 0] : -1;
  n = b_ranked ? b[at.trans_b ? 0 : 1] : -1;
  if (known(ka) && known(kb) && ka != kb)
    return node.error(StatusCode::kInvalidModel,
                      "inner dimensions differ: op(A) is ?x" + std::to_string(ka) + ", op(B) is " +
                          std::to_string(kb) + "x? (A " + dims_to_string(a) + ", B " +
                          dims_to_string(b) + ", transA " + std::to_string(at.trans_a) +
                          ", transB " + std::to_string(at.trans_b) + ")");
  k = known(ka) ? ka : kb;
  return ok_status();
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_gemm_input(ctx, 0));
  SRT_RETURN_IF_ERROR(require_gemm_input(ctx, 1));
  DataType t = ctx.input_dtype(0);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != t)
      return ctx.error(std::string("input ") + std::to_string(i) + " has type " +
                       dtype_name(ctx.input_dtype(i)) + ", expected " + dtype_name(t));
  SRT_ASSIGN_OR_RETURN(GemmAttrs at, read_gemm_attrs(ctx.node()));
  int64_t m, n, k;
  SRT_RETURN_IF_ERROR(matrix_dims(ctx.node(), ctx.input(0).has_shape, ctx.input_dims(0),
                                  ctx.input(1).has_shape, ctx.input_dims(1), at, m, n, k));
  if (ctx.has_input(2) && ctx.input(2).has_shape)
    SRT_RETURN_IF_ERROR(check_bias(ctx.node(), ctx.input_dims(2), m, n));
  ctx.set_output(0, t, {m, n});
  return ok_status();
}

template <typename T>
Status run_typed(KernelContext& ctx, const GemmAttrs& at, int64_t m, int64_t n, int64_t k) {
  const TensorRef& a = ctx.input(0);
  const TensorRef& b = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  const bool has_c = ctx.has_input(2) && at.beta != 0.f;
  const int64_t lda = a.dims[1], ldb = b.dims[1];
  if constexpr (std::is_integral_v<T>) {
    T* py = y.as<T>();
    if (has_c) {
      const T* pc = ctx.input(2).as<T>();
      auto s = broadcast_strides(ctx.input(2).dims, {m, n});
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) py[i * n + j] = pc[i * s[0] + j * s[1]];
    }
    naive_gemm<T>(at.trans_a, at.trans_b, m, n, k, at.alpha, a.as<T>(), lda, b.as<T>(), ldb,
                  has_c ? at.beta : 0.0, py, n);
    return ok_status();
  } else {
    FloatOut<T> fy(y.as<T>(), y.numel());
    float* py = fy.get();
    if (has_c) {
      const T* pc = ctx.input(2).as<T>();
      auto s = broadcast_strides(ctx.input(2).dims, {m, n});
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) py[i * n + j] = load(pc[i * s[0] + j * s[1]]);
    }
    FloatView<T> fa(a.as<T>(), a.numel());
    const float beta = has_c ? at.beta : 0.f;
    Status st;
    if constexpr (std::is_same_v<T, float>) {
      st = sgemm(at.trans_a, at.trans_b, m, n, k, at.alpha, fa.get(), lda, b.as<T>(), ldb, beta, py, n);
    } else if (!at.trans_a && m <= kHalfGemmMaxRows) {
      // A few rows (a decode step) against a half-type weight: read B as stored, once.
      std::vector<float> ab(static_cast<size_t>(m * n));
      half_b_gemm_rows(at.trans_b, m, n, k, fa.get(), lda, b.as<T>(), ldb, ab.data(), n);
      for (int64_t i = 0; i < m * n; ++i) py[i] = at.alpha * ab[i] + (beta != 0.f ? beta * py[i] : 0.f);
    } else {
      st = half_b_sgemm(at.trans_a, at.trans_b, m, n, k, at.alpha, fa.get(), lda, b.as<T>(), ldb, beta, py, n);
    }
    SRT_RETURN_IF_ERROR(st.with_context(ctx.node().describe()));
    fy.flush();
    return ok_status();
  }
}

Status cpu(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  SRT_ASSIGN_OR_RETURN(GemmAttrs at, read_gemm_attrs(node));
  const TensorRef& a = ctx.input(0);
  const TensorRef& b = ctx.input(1);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != a.dtype)
      return ctx.error("input " + std::to_string(i) + " has type " + dtype_name(ctx.input(i).dtype) +
                       ", expected " + dtype_name(a.dtype));
  int64_t m, n, k;
  SRT_RETURN_IF_ERROR(matrix_dims(node, true, a.dims, true, b.dims, at, m, n, k));
  // Re-checked here: the kernel may see run-time dims the build-time rule could not.
  int64_t cm = m, cn = n;
  if (ctx.has_input(2)) SRT_RETURN_IF_ERROR(check_bias(node, ctx.input(2).dims, cm, cn));
  if (ctx.output(0).dims != Dims{m, n})
    return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims) + ", expected " +
                     dims_to_string({m, n}));
  return dispatch<kFloats | kSignedInts>(a.dtype, node.describe(), [&]<typename T>() {
    return run_typed<T>(ctx, at, m, n, k);
  });
}

// 2 M N K for the residency planner: K is A's first dim under transA, else its last.
double flops(const ir::Node& node, std::span<const Dims* const> in, const Dims& out) {
  const Dims* a = cost_input(in, 0);
  if (!a || a->empty()) return 0;
  auto trans_a = node.attr_int("transA", 0);
  const int64_t k = trans_a.ok() && *trans_a ? a->front() : a->back();
  return 2.0 * estimate_numel(out) * static_cast<double>(std::max<int64_t>(k, 1));
}

}  // namespace

STREAMRT_REGISTER_OP(Gemm, {.op_type = "Gemm", .min_opset = 7, .infer = infer, .cpu = cpu,
                            .cpu_dtypes = dtypes(kFloats) | dtype_mask({DataType::kInt32, DataType::kInt64}),
                            .streamable_inputs = {0, 1, 2}, .tf32 = true, .flops = flops});

}  // namespace streamrt::ops
