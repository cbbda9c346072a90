// Einsum (opset 12): the equation (einsum.h) over one or more operands of one numeric type.
// The CPU kernel walks the output's index space and, for each output element, the summed
// indices' space, multiplying the operands at strided offsets (a repeated index has the sum of
// its dims' strides: the diagonal; a broadcast ellipsis dim has stride 0). Floats accumulate in
// float (half types) or their own type, integers in wrapping 64-bit arithmetic.
#include "ops/einsum.h"

#include <algorithm>
#include <array>
#include <optional>
#include <type_traits>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/gemm_util.h"

namespace streamrt::ops::einsum {
namespace {

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

struct Parser {
  const ir::Node& node;
  const std::string& eq;

  Status bad(const std::string& why) const {
    return node.error(StatusCode::kInvalidModel, "equation '" + eq + "': " + why);
  }

  Result<Term> term(const std::string& s) const {
    Term t;
    for (size_t i = 0; i < s.size();) {
      if (s.compare(i, 3, "...") == 0) {
        if (t.has_ellipsis()) return bad("term '" + s + "' has more than one ellipsis");
        t.labels += kEllipsisMark;
        i += 3;
      } else if (is_letter(s[i])) {
        t.labels += s[i++];
      } else {
        return bad(std::string("unexpected character '") + s[i] + "' in term '" + s + "'");
      }
    }
    return t;
  }

  // The implicit output: the ellipsis, then the letters seen exactly once, in ASCII order.
  static Term implicit_output(const std::vector<Term>& inputs) {
    std::array<int, 128> count{};
    bool ellipsis = false;
    for (const Term& t : inputs)
      for (char c : t.labels) c == kEllipsisMark ? void(ellipsis = true) : void(++count[static_cast<size_t>(c)]);
    Term out;
    if (ellipsis) out.labels += kEllipsisMark;
    for (int c = 0; c < 128; ++c)
      if (count[static_cast<size_t>(c)] == 1) out.labels += static_cast<char>(c);
    return out;
  }

  Status check_output(const Equation& e) const {
    std::array<bool, 128> in_inputs{}, seen{};
    for (const Term& t : e.inputs)
      for (char c : t.labels) in_inputs[static_cast<size_t>(c)] = true;
    for (char c : e.output.labels) {
      if (c == kEllipsisMark) continue;
      if (!in_inputs[static_cast<size_t>(c)]) return bad(std::string("output index '") + c + "' is in no input");
      if (seen[static_cast<size_t>(c)]) return bad(std::string("output index '") + c + "' is repeated");
      seen[static_cast<size_t>(c)] = true;
    }
    return ok_status();
  }
};

}  // namespace

Result<Equation> parse(const ir::Node& node, const std::string& eq, size_t num_inputs) {
  Parser p{node, eq};
  std::string s;
  for (char c : eq)
    if (c != ' ' && c != '\t') s += c;
  const size_t arrow = s.find("->");
  Equation e;
  e.text = eq;
  e.explicit_output = arrow != std::string::npos;
  const std::string lhs = s.substr(0, arrow);
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    SRT_ASSIGN_OR_RETURN(Term t, p.term(lhs.substr(start, comma - start)));
    e.inputs.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != num_inputs)
    return p.bad("has " + std::to_string(e.inputs.size()) + " input terms for " + std::to_string(num_inputs) +
                 " inputs");
  if (e.explicit_output) {
    SRT_ASSIGN_OR_RETURN(e.output, p.term(s.substr(arrow + 2)));  // a second "->" fails here ('-')
    SRT_RETURN_IF_ERROR(p.check_output(e));
  } else {
    e.output = Parser::implicit_output(e.inputs);
  }
  return e;
}

namespace {

constexpr int64_t kUnset = -2;

// Merges operand dim `d` into the size of an index: letters must agree, ellipsis dims
// broadcast (1 against n). -1 (unknown at inference) yields to a static size.
bool merge_size(int64_t& cur, int64_t d, bool ellipsis) {
  if (cur == kUnset || cur == d) cur = d;
  else if (ellipsis && d == 1) {}
  else if (ellipsis && cur == 1) cur = d;
  else if (d == -1) {}
  else if (cur == -1) cur = d;
  else return false;
  return true;
}

}  // namespace

Result<Plan> resolve(const ir::Node& node, const Equation& eq, const std::vector<Dims>& dims) {
  auto bad = [&](size_t k, const std::string& why) {
    return node.error(StatusCode::kInvalidModel, "equation '" + eq.text + "': term " + std::to_string(k) + " " +
                                                     why);
  };
  // Index ids: the ellipsis dims 0..E-1 (right-aligned across operands), then the letters.
  int64_t ell = 0;
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    const int64_t extra = static_cast<int64_t>(dims[k].size()) - static_cast<int64_t>(eq.inputs[k].letters());
    if (extra < 0 || (!eq.inputs[k].has_ellipsis() && extra != 0))
      return bad(k, "does not fit operand " + std::to_string(k) + " of shape " + dims_to_string(dims[k]));
    ell = std::max(ell, extra);
  }
  std::array<int, 128> id;
  id.fill(-1);
  int next = static_cast<int>(ell);
  for (const Term& t : eq.inputs)
    for (char c : t.labels)
      if (c != kEllipsisMark && id[static_cast<size_t>(c)] < 0) id[static_cast<size_t>(c)] = next++;
  Plan p;
  p.sizes.assign(static_cast<size_t>(next), kUnset);
  p.strides.assign(eq.inputs.size(), std::vector<int64_t>(static_cast<size_t>(next), 0));
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    const std::vector<int64_t> dense = dense_strides(dims[k]);
    const int64_t extra = static_cast<int64_t>(dims[k].size() - eq.inputs[k].letters());
    size_t axis = 0;
    for (char c : eq.inputs[k].labels) {
      const bool is_ell = c == kEllipsisMark;
      for (int64_t e = 0; e < (is_ell ? extra : 1); ++e, ++axis) {
        const int i = is_ell ? static_cast<int>(ell - extra + e) : id[static_cast<size_t>(c)];
        const int64_t d = dims[k][axis];
        if (!merge_size(p.sizes[static_cast<size_t>(i)], d, is_ell))
          return bad(k, "gives size " + std::to_string(d) + " to an index of size " +
                            std::to_string(p.sizes[static_cast<size_t>(i)]) + " (operand shape " +
                            dims_to_string(dims[k]) + ")");
        if (!(is_ell && d == 1)) p.strides[k][static_cast<size_t>(i)] += dense[axis];  // diagonal: summed
      }
    }
  }
  for (int64_t& s : p.sizes)
    if (s == kUnset) s = 1;  // an ellipsis dim only some operands have
  std::vector<bool> in_out(static_cast<size_t>(next), false);
  for (char c : eq.output.labels) {
    if (c == kEllipsisMark) {
      for (int i = 0; i < ell; ++i) p.out_indices.push_back(i);
    } else {
      p.out_indices.push_back(id[static_cast<size_t>(c)]);
    }
  }
  for (int i : p.out_indices) {
    in_out[static_cast<size_t>(i)] = true;
    p.out_dims.push_back(p.sizes[static_cast<size_t>(i)]);
  }
  for (int i = 0; i < next; ++i)
    if (!in_out[static_cast<size_t>(i)]) p.sum_indices.push_back(i);
  return p;
}

Result<Plan> plan_for(const ir::Node& node, const std::vector<Dims>& dims) {
  SRT_ASSIGN_OR_RETURN(std::string eq, node.attr_string("equation"));
  SRT_ASSIGN_OR_RETURN(Equation e, parse(node, eq, dims.size()));
  return resolve(node, e, dims);
}

namespace {

Status check_inputs(const InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.error("needs at least one input");
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    SRT_RETURN_IF_ERROR(require_input(ctx, k, kNumeric));
    if (ctx.input_dtype(k) != ctx.input_dtype(0))
      return ctx.error("input " + std::to_string(k) + " has type " + dtype_name(ctx.input_dtype(k)) +
                       ", input 0 has " + dtype_name(ctx.input_dtype(0)));
  }
  return ok_status();
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(check_inputs(ctx));
  std::vector<Dims> dims;
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    if (!ctx.input(k).has_shape) {
      // The rank is still known when the output has no ellipsis; keep it simple: unranked,
      // but the equation is checked for syntax.
      SRT_ASSIGN_OR_RETURN(std::string eq, ctx.node().attr_string("equation"));
      SRT_RETURN_IF_ERROR(parse(ctx.node(), eq, ctx.num_inputs()).status());
      ctx.set_output_unranked(0, ctx.input_dtype(0));
      return ok_status();
    }
    dims.push_back(ctx.input_dims(k));
  }
  SRT_ASSIGN_OR_RETURN(Plan p, plan_for(ctx.node(), dims));
  ctx.set_output(0, ctx.input_dtype(0), p.out_dims);
  return ok_status();
}

// Plan load: the equation parses for this many inputs (the kernel re-checks it against the dims).
Status verify(const InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(std::string eq, ctx.node().attr_string("equation"));
  return parse(ctx.node(), eq, ctx.num_inputs()).status();
}

// Steps `counter` (over `indices`, innermost last) and the operands' offsets to the next element.
void advance(const Plan& p, const std::vector<int>& indices, std::vector<int64_t>& counter,
             std::vector<int64_t>& offsets) {
  for (size_t d = indices.size(); d-- > 0;) {
    const size_t i = static_cast<size_t>(indices[d]);
    ++counter[d];
    for (size_t k = 0; k < offsets.size(); ++k) offsets[k] += p.strides[k][i];
    if (counter[d] < p.sizes[i]) return;
    for (size_t k = 0; k < offsets.size(); ++k) offsets[k] -= p.strides[k][i] * p.sizes[i];
    counter[d] = 0;
  }
}

// The two-operand contraction as batched GEMM: every output index is a batch index (both
// operands vary along it), an M index (only the first does, or neither) or an N index (only
// the second); every summed index a K index along which both vary. The operands are packed
// into [batch, M, K] and [batch, K, N] float buffers by the same strided walk as the generic
// kernel (so diagonals and broadcast dims need nothing special), multiplied with sgemm, and
// the [batch, M, N] result scattered to the output's index order. nullopt when the equation is
// not of that form (a summed index only one operand varies along): the generic loop runs.
struct GemmSplit {
  std::vector<int> batch, m, n, k;
};

std::optional<GemmSplit> gemm_split(const Plan& p) {
  if (p.strides.size() != 2) return std::nullopt;
  GemmSplit g;
  for (int i : p.out_indices) {
    const auto u = static_cast<size_t>(i);
    if (p.strides[1][u] == 0) g.m.push_back(i);
    else if (p.strides[0][u] == 0) g.n.push_back(i);
    else g.batch.push_back(i);
  }
  for (int i : p.sum_indices) {
    const auto u = static_cast<size_t>(i);
    if (p.sizes[u] != 1 && (p.strides[0][u] == 0 || p.strides[1][u] == 0)) return std::nullopt;
    g.k.push_back(i);
  }
  return g;
}

int64_t extent(const Plan& p, const std::vector<int>& idx) {
  int64_t e = 1;
  for (int i : idx) e *= p.sizes[static_cast<size_t>(i)];
  return e;
}

// Copies operand k's elements in the order of `order` (outermost first) into `dst`.
template <typename T>
void pack(const Plan& p, size_t k, const T* src, const std::vector<int>& order, float* dst) {
  Plan one{p.sizes, {p.strides[k]}, {}, {}, {}};
  std::vector<int64_t> counter(order.size(), 0), off(1, 0);
  for (int64_t i = 0, n = extent(p, order); i < n; ++i) {
    dst[i] = static_cast<float>(load(src[off[0]]));
    advance(one, order, counter, off);
  }
}

template <typename T>
Status run_gemm(const Plan& p, const GemmSplit& g, const T* a, const T* b, T* y) {
  const int64_t nb = extent(p, g.batch), m = extent(p, g.m), n = extent(p, g.n), k = extent(p, g.k);
  auto cat = [](std::vector<int> x, const std::vector<int>& y1, const std::vector<int>& y2) {
    x.insert(x.end(), y1.begin(), y1.end());
    x.insert(x.end(), y2.begin(), y2.end());
    return x;
  };
  std::vector<float> pa(static_cast<size_t>(nb * m * k)), pb(static_cast<size_t>(nb * k * n)),
      pc(static_cast<size_t>(nb * m * n));
  pack(p, 0, a, cat(g.batch, g.m, g.k), pa.data());
  pack(p, 1, b, cat(g.batch, g.k, g.n), pb.data());
  for (int64_t i = 0; i < nb; ++i)
    SRT_RETURN_IF_ERROR(sgemm(false, false, m, n, k, 1.f, pa.data() + i * m * k, k, pb.data() + i * k * n, n, 0.f,
                              pc.data() + i * m * n, n));
  // Scatter: walk [batch, M, N] with the output's strides for those indices.
  std::vector<int64_t> out_stride(p.sizes.size(), 0);
  int64_t s = 1;
  for (size_t d = p.out_indices.size(); d-- > 0;) {
    out_stride[static_cast<size_t>(p.out_indices[d])] = s;
    s *= p.sizes[static_cast<size_t>(p.out_indices[d])];
  }
  Plan out{p.sizes, {out_stride}, {}, {}, {}};
  const std::vector<int> order = cat(g.batch, g.m, g.n);
  std::vector<int64_t> counter(order.size(), 0), off(1, 0);
  for (size_t i = 0; i < pc.size(); ++i) {
    y[off[0]] = store<T>(pc[i]);
    advance(out, order, counter, off);
  }
  return ok_status();
}

template <typename T>
void run(const Plan& p, const std::vector<const T*>& x, T* y) {
  // Integers wrap (unsigned 64-bit) instead of overflowing, which would be undefined.
  using A = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;
  int64_t total_out = 1, total_sum = 1;
  for (int i : p.out_indices) total_out *= p.sizes[static_cast<size_t>(i)];
  for (int i : p.sum_indices) total_sum *= p.sizes[static_cast<size_t>(i)];
  const size_t K = x.size();
  std::vector<int64_t> base(K, 0), off(K), oc(p.out_indices.size(), 0), sc(p.sum_indices.size(), 0);
  for (int64_t o = 0; o < total_out; ++o) {
    A acc = 0;
    off = base;
    for (int64_t s = 0; s < total_sum; ++s) {
      A prod = 1;
      for (size_t k = 0; k < K; ++k) prod = static_cast<A>(prod * static_cast<A>(load(x[k][off[k]])));
      acc = static_cast<A>(acc + prod);
      advance(p, p.sum_indices, sc, off);
    }
    if constexpr (std::is_integral_v<T>) y[o] = static_cast<T>(static_cast<int64_t>(acc));
    else y[o] = store<T>(acc);
    advance(p, p.out_indices, oc, base);
  }
}

Status cpu(KernelContext& ctx) {
  if (ctx.num_inputs() == 0 || !ctx.has_output(0)) return ctx.error("needs at least one input and an output");
  std::vector<Dims> dims;
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    if (!ctx.has_input(k) || ctx.input(k).dtype != ctx.input(0).dtype)
      return ctx.error("input " + std::to_string(k) + " is missing or not of input 0's type");
    dims.push_back(ctx.input(k).dims);
  }
  SRT_ASSIGN_OR_RETURN(Plan p, plan_for(ctx.node(), dims));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, ctx.input(0).dtype, p.out_dims));
  return dispatch<kNumeric>(ctx.input(0).dtype, ctx.node().describe(), [&]<typename T>() {
    std::vector<const T*> x;
    for (size_t k = 0; k < ctx.num_inputs(); ++k) x.push_back(ctx.input(k).as<T>());
    if constexpr (!std::is_integral_v<T>) {
      if (auto g = gemm_split(p)) return run_gemm<T>(p, *g, x[0], x[1], ctx.output(0).as<T>());
    }
    run<T>(p, x, ctx.output(0).as<T>());
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Einsum, {.op_type = "Einsum", .min_opset = 12, .infer = infer, .cpu = cpu, .verify = verify,
                              .cpu_dtypes = dtypes(kNumeric)});

}  // namespace streamrt::ops::einsum
