// MatMulGroup (ops/matmul_group.h): shape rule and CPU kernel. The CPU computes what the unfused
// steps would: RMSNormalization's rows (ops/rms_normalization.h), MatMul's product and fused bias
// (ops/matmul.h), FusedElementwise's gate and Rotary's rotation, with the same roundings.
#include "ops/matmul_group.h"

#include "ops/fused_elementwise.h"
#include "ops/gemm_util.h"
#include "ops/matmul.h"
#include "ops/rms_normalization.h"

namespace streamrt::ops {

int64_t MatMulGroupLayout::scratch_elements() const {
  if (!has_scratch()) return 0;
  if (rows < 0 || k < 0 || (gate && n[0] < 0)) return -1;
  return (norm ? rows * k : 0) + (gate ? 2 * rows * n[0] : 0);
}

namespace {

// The rotary tables of `l`'s products (inputs 8..11) and rotary_dim: which products, D, T.
Status rotary_layout(const ir::Node& node, const std::vector<bool>& present, std::span<const Dims* const> tables,
                     MatMulGroupLayout& l) {
  auto bad = [&](const std::string& why) { return node.error(StatusCode::kInvalidModel, why); };
  auto has = [&](size_t i) { return i < present.size() && present[i]; };
  SRT_ASSIGN_OR_RETURN(l.rotary_dim, node.attr_int("rotary_dim", 0));
  for (int i = 0; i < kMatMulGroupRotaryMax; ++i) {
    const size_t c = kMatMulGroupRotary + 2 * static_cast<size_t>(i);
    if (has(c) != has(c + 1)) return bad("rotary tables of product " + std::to_string(i) + ": cos and sin go together");
    l.rotary[static_cast<size_t>(i)] = has(c);
  }
  if (!l.rotates()) {
    if (l.rotary_dim != 0) return bad("attribute rotary_dim without rotary tables");
    return ok_status();
  }
  if (l.rotary_dim <= 0 || l.rotary_dim % 2 != 0)
    return bad("attribute rotary_dim must be even and positive, got " + std::to_string(l.rotary_dim));
  if (l.gate) return bad("a gated group rotates nothing");
  for (int i = 0; i < kMatMulGroupRotaryMax; ++i) {
    const size_t ui = static_cast<size_t>(i);
    if (!l.rotary[ui]) continue;
    if (i >= l.count) return bad("rotary tables of product " + std::to_string(i) + ", which has no weight");
    if (l.n[ui] >= 0 && l.n[ui] % l.rotary_dim != 0)
      return bad("product " + std::to_string(i) + "'s " + std::to_string(l.n[ui]) + " columns are no whole heads of " +
                 std::to_string(l.rotary_dim));
    const Dims* cd = 2 * ui < tables.size() ? tables[2 * ui] : nullptr;
    const Dims* sd = 2 * ui + 1 < tables.size() ? tables[2 * ui + 1] : nullptr;
    if (!cd || !sd) continue;
    if (*cd != *sd) return bad("cos " + dims_to_string(*cd) + " and sin " + dims_to_string(*sd) + " differ");
    int64_t elems = 1;
    for (int64_t d : *cd) elems = d < 0 || elems < 0 ? -1 : elems * d;
    if (cd->empty() || (cd->back() >= 0 && cd->back() != l.rotary_dim))
      return bad("rotary tables " + dims_to_string(*cd) + " must end in rotary_dim " + std::to_string(l.rotary_dim));
    if (elems >= 0) {
      if (elems == 0) return bad("rotary tables " + dims_to_string(*cd) + " are empty");
      l.table_rows[ui] = elems / l.rotary_dim;
    }
  }
  return ok_status();
}

}  // namespace

Result<MatMulGroupLayout> matmul_group_layout(const ir::Node& node, const std::vector<bool>& present, const Dims& a,
                                              std::span<const Dims* const> w, std::span<const Dims* const> tables) {
  auto bad = [&](const std::string& why) { return node.error(StatusCode::kInvalidModel, why); };
  auto has = [&](size_t i) { return i < present.size() && present[i]; };
  MatMulGroupLayout l;
  if (present.size() > kMatMulGroupInputs)
    return bad("takes at most " + std::to_string(kMatMulGroupInputs) + " inputs, got " + std::to_string(present.size()));
  if (!has(0)) return bad("input 0 (A) is missing");
  while (l.count < kMatMulGroupMax && has(kMatMulGroupWeight + l.count)) ++l.count;
  for (size_t i = kMatMulGroupWeight + l.count; i < kMatMulGroupBias; ++i)
    if (has(i)) return bad("weight input " + std::to_string(i) + " follows an absent one");
  if (l.count < 1) return bad("needs at least one weight (input 2)");
  for (int i = 0; i < kMatMulGroupMax; ++i) {
    l.bias[i] = has(kMatMulGroupBias + i);
    if (l.bias[i] && i >= l.count) return bad("bias input " + std::to_string(kMatMulGroupBias + i) + " has no weight");
  }
  l.norm = has(kMatMulGroupScale);
  SRT_ASSIGN_OR_RETURN(int64_t gate, node.attr_int("gate", 0));
  SRT_ASSIGN_OR_RETURN(l.epsilon, node.attr_float("epsilon", 1e-5f));
  if (gate != 0 && gate != 1) return bad("attribute gate must be 0 or 1, got " + std::to_string(gate));
  l.gate = gate == 1;
  if (l.gate && l.count != 2) return bad("a gate needs two weights, got " + std::to_string(l.count));
  if (!(l.epsilon >= 0.f)) return bad("attribute epsilon must be >= 0");
  if (a.empty()) return bad("A must have at least one axis");
  l.k = a.back();
  l.lead.assign(a.begin(), a.end() - 1);
  l.rows = 1;
  for (int64_t d : l.lead) l.rows = d < 0 || l.rows < 0 ? -1 : l.rows * d;
  for (int i = 0; i < l.count; ++i) {
    const Dims* wd = i < static_cast<int>(w.size()) ? w[static_cast<size_t>(i)] : nullptr;
    if (!wd) continue;  // dims unknown
    if (wd->size() != 2) return bad("weight " + std::to_string(i) + " must be 2-D, got " + dims_to_string(*wd));
    if ((*wd)[0] >= 0 && l.k >= 0 && (*wd)[0] != l.k)
      return bad("weight " + std::to_string(i) + " " + dims_to_string(*wd) + " does not take A's last dim " +
                 std::to_string(l.k));
    l.n[static_cast<size_t>(i)] = (*wd)[1];
  }
  if (l.gate && l.n[0] >= 0 && l.n[1] >= 0 && l.n[0] != l.n[1])
    return bad("gated weights must have one N, got " + std::to_string(l.n[0]) + " and " + std::to_string(l.n[1]));
  SRT_RETURN_IF_ERROR(rotary_layout(node, present, tables, l));
  return l;
}

Result<MatMulGroupLayout> matmul_group_layout(const ir::Node& node, std::span<const TensorInfo> in) {
  std::vector<bool> present;
  std::array<const Dims*, kMatMulGroupMax> w = {};
  std::array<const Dims*, 2 * kMatMulGroupRotaryMax> tables = {};
  for (const TensorInfo& t : in) present.push_back(t.dtype != DataType::kUndefined);
  auto dims_of = [&](size_t k) { return k < in.size() && present[k] && in[k].has_shape ? &in[k].dims : nullptr; };
  for (size_t i = 0; i < w.size(); ++i) w[i] = dims_of(kMatMulGroupWeight + i);
  for (size_t i = 0; i < tables.size(); ++i) tables[i] = dims_of(kMatMulGroupRotary + i);
  static const Dims kUnknown = {-1};
  return matmul_group_layout(node, present, !in.empty() && in[0].has_shape ? in[0].dims : kUnknown, w, tables);
}

Result<MatMulGroupLayout> matmul_group_kernel_layout(const KernelContext& ctx) {
  std::vector<bool> present;
  std::array<const Dims*, kMatMulGroupMax> w = {};
  std::array<const Dims*, 2 * kMatMulGroupRotaryMax> tables = {};
  for (size_t i = 0; i < ctx.num_inputs(); ++i) present.push_back(ctx.has_input(i));
  auto dims_of = [&](size_t k) { return ctx.has_input(k) ? &ctx.input(k).dims : nullptr; };
  for (size_t i = 0; i < w.size(); ++i) w[i] = dims_of(kMatMulGroupWeight + i);
  for (size_t i = 0; i < tables.size(); ++i) tables[i] = dims_of(kMatMulGroupRotary + i);
  SRT_ASSIGN_OR_RETURN(MatMulGroupLayout l, matmul_group_layout(ctx.node(), present, ctx.input(0).dims, w, tables));
  for (size_t i = 0; i < l.products(); ++i) {
    Dims out = l.lead;
    out.push_back(l.n[i]);
    if (ctx.num_outputs() <= i || ctx.output(i).dims != out)
      return ctx.error("output " + std::to_string(i) + " must have dims " + dims_to_string(out));
  }
  for (size_t i = 0; i < l.rotary.size(); ++i)
    if (l.rotary[i] && (l.table_rows[i] < 1 || l.rows % l.table_rows[i] != 0))
      return ctx.error("rotary tables of " + std::to_string(l.table_rows[i]) + " rows do not repeat whole over " +
                       std::to_string(l.rows) + " rows (product " + std::to_string(i) + ")");
  return l;
}

namespace {

std::vector<TensorInfo> inputs_of(const InferContext& ctx) {
  std::vector<TensorInfo> in;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) in.push_back(ctx.input(i));
  return in;
}

Status check_types(const InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  const DataType t = ctx.input_dtype(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != t)
      return ctx.error("input " + std::to_string(i) + " has type " + dtype_name(ctx.input_dtype(i)) + ", A has " +
                       dtype_name(t));
  return ok_status();
}

Status check_outputs(const InferContext& ctx, const MatMulGroupLayout& l) {
  const size_t want = l.products() + (l.has_scratch() ? 1 : 0);
  if (ctx.num_outputs() != want)
    return ctx.error("has " + std::to_string(ctx.num_outputs()) + " outputs, expected " + std::to_string(want) +
                     (l.has_scratch() ? " (the products and the scratch)" : " (the products)"));
  return ok_status();
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(check_types(ctx));
  const DataType t = ctx.input_dtype(0);
  SRT_ASSIGN_OR_RETURN(MatMulGroupLayout l, matmul_group_layout(ctx.node(), inputs_of(ctx)));
  SRT_RETURN_IF_ERROR(check_outputs(ctx, l));
  if (l.norm && ctx.input(kMatMulGroupScale).has_shape) {
    const Dims& s = ctx.input_dims(kMatMulGroupScale);
    if (s.size() != 1 || (s[0] >= 0 && l.k >= 0 && s[0] != l.k))
      return ctx.error("the normalization's scale must be [K] = [" + std::to_string(l.k) + "], got " + dims_to_string(s));
  }
  for (int i = 0; i < l.count; ++i) {
    const size_t b = kMatMulGroupBias + static_cast<size_t>(i);
    const size_t w = kMatMulGroupWeight + static_cast<size_t>(i);
    if (l.bias[static_cast<size_t>(i)] && ctx.input(b).has_shape && ctx.input(w).has_shape)
      SRT_RETURN_IF_ERROR(check_matmul_bias(ctx.node(), ctx.input_dims(b), ctx.input_dims(w), l.lead.size() + 1));
  }
  if (!ctx.input(0).has_shape) {
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_unranked(i, t);
    return ok_status();
  }
  for (size_t i = 0; i < l.products(); ++i) {
    Dims out = l.lead;
    out.push_back(l.n[i]);
    ctx.set_output(i, t, std::move(out));
  }
  if (l.has_scratch()) ctx.set_output(l.products(), t, {l.scratch_elements()});
  return ok_status();
}

// Rotates P's rows in place: head h of row r as Rotary would rotate it with row r % T of the tables.
template <typename T>
void rotate_rows(T* p, int64_t rows, int64_t n, int64_t d, const T* cos, const T* sin, int64_t table_rows) {
  const int64_t half = d / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const T* c = cos + (r % table_rows) * d;
    const T* s = sin + (r % table_rows) * d;
    for (int64_t h = 0; h < n; h += d) {
      T* x = p + r * n + h;
      for (int64_t i = 0; i < half; ++i) {
        const float a = static_cast<float>(load(x[i])), b = static_cast<float>(load(x[i + half]));
        x[i] = store<T>(a * static_cast<float>(load(c[i])) + -b * static_cast<float>(load(s[i])));
        x[i + half] = store<T>(b * static_cast<float>(load(c[i + half])) + a * static_cast<float>(load(s[i + half])));
      }
    }
  }
}

template <typename T>
Status run_typed(KernelContext& ctx, const MatMulGroupLayout& l) {
  const int64_t rows = l.rows, k = l.k;
  const T* pa = ctx.input(0).as<const T>();
  std::vector<T> normed;
  if (l.norm) {
    normed.resize(static_cast<size_t>(rows * k));
    rms_norm_rows<T>(pa, ctx.input(kMatMulGroupScale).as<const T>(), k, normed.data(), rows, k, l.epsilon);
    pa = normed.data();
  }
  FloatView<T> fa(pa, rows * k);
  std::array<std::vector<T>, 2> gated;  // the gate's operands, rounded as the products would be
  for (int i = 0; i < l.count; ++i) {
    const size_t ui = static_cast<size_t>(i);
    const int64_t n = l.n[ui];
    T* out = l.gate ? (gated[ui].resize(static_cast<size_t>(rows * n)), gated[ui].data()) : ctx.output(ui).as<T>();
    FloatOut<T> fy(out, rows * n);
    SRT_RETURN_IF_ERROR(matmul_float_rows<T>(rows, n, k, fa.get(), ctx.input(kMatMulGroupWeight + ui).as<const T>(), fy.get())
                            .with_context(ctx.node().describe()));
    if (l.bias[ui]) {
      const T* pb = ctx.input(kMatMulGroupBias + ui).as<const T>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) fy.get()[r * n + j] += static_cast<float>(load(pb[j]));
    }
    fy.flush();
    if (ui < l.rotary.size() && l.rotary[ui])
      rotate_rows<T>(out, rows, n, l.rotary_dim, ctx.input(kMatMulGroupRotary + 2 * ui).as<const T>(),
                     ctx.input(kMatMulGroupRotary + 2 * ui + 1).as<const T>(), l.table_rows[ui]);
  }
  if (l.gate) {
    T* y = ctx.output(0).as<T>();
    for (int64_t i = 0, total = rows * l.n[0]; i < total; ++i)
      y[i] = store<T>(fused::gate_value(static_cast<float>(load(gated[0][static_cast<size_t>(i)])),
                                        static_cast<float>(load(gated[1][static_cast<size_t>(i)]))));
  }
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(MatMulGroupLayout l, matmul_group_kernel_layout(ctx));
  if (l.rows == 0) return ok_status();
  return dispatch<kFloats>(ctx.input(0).dtype, ctx.node().describe(), [&]<typename T>() { return run_typed<T>(ctx, l); });
}

// Plan load: the attributes and the input / output counts (the shape rule checks the rest).
Status verify(const InferContext& ctx) {
  SRT_RETURN_IF_ERROR(check_types(ctx));
  SRT_ASSIGN_OR_RETURN(MatMulGroupLayout l, matmul_group_layout(ctx.node(), inputs_of(ctx)));
  return check_outputs(ctx, l);
}

// 2 M K (N_0 + ...) for the residency planner.
double flops(const ir::Node&, std::span<const Dims* const> in, const Dims&) {
  const Dims* a = cost_input(in, 0);
  if (!a || a->empty()) return 0;
  double rows = estimate_numel(*a) / static_cast<double>(std::max<int64_t>(a->back(), 1)), cols = 0;
  for (int i = 0; i < kMatMulGroupMax; ++i) {
    const Dims* w = cost_input(in, kMatMulGroupWeight + static_cast<size_t>(i));
    if (w && w->size() == 2) cols += static_cast<double>(std::max<int64_t>((*w)[1], 1));
  }
  return 2.0 * rows * cols * static_cast<double>(std::max<int64_t>(a->back(), 1));
}

}  // namespace

STREAMRT_REGISTER_OP(MatMulGroup, {.op_type = kMatMulGroup, .infer = infer, .cpu = cpu, .verify = verify,
                                   .cpu_dtypes = dtypes(kFloats), .streamable_inputs = {1, 2, 3, 4, 5, 6, 7},
                                   .tf32 = true, .flops = flops});

}  // namespace streamrt::ops
