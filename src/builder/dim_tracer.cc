// DimTracer (see dim_tracer.h).
#include "builder/dim_tracer.h"

#include <algorithm>

#include "ops/attention.h"

namespace streamrt::builder {
namespace {

// An int attribute (`def` when absent), nullopt when it has the wrong kind.
std::optional<int64_t> int_attr(const ir::Node& n, const char* key, int64_t def) {
  auto a = n.attr_int(key, def);
  return a.ok() ? std::optional(*a) : std::nullopt;
}

int64_t rank_or_zero(const ir::Graph& g, ir::ValueId v) { return static_cast<int64_t>(rank_of(g, v)); }

// a + b: a static size added to the other's addend, or two plain dims (no cap, one term each) as
// one sum whose terms are ordered, so that past + new and new + past are one form.
std::optional<SymDim> add(const SymDim& a, const SymDim& b) {
  if (a.is_static() && b.is_static()) return SymDim{ir::kNoValue, a.n + b.n};
  if (a.is_static() || b.is_static()) {
    SymDim s = a.is_static() ? b : a;
    s.plus += a.is_static() ? a.n : b.n;
    return s;
  }
  if (a.cap || b.cap || a.root2 != ir::kNoValue || b.root2 != ir::kNoValue) return std::nullopt;
  const bool a_first = std::make_pair(a.root, a.n) <= std::make_pair(b.root, b.n);
  const SymDim& lo = a_first ? a : b;
  const SymDim& hi = a_first ? b : a;
  SymDim s{lo.root, lo.n, 0, a.plus + b.plus};
  s.root2 = hi.root;
  s.n2 = hi.n;
  return s;
}

}  // namespace

std::optional<SymDim> DimTracer::dim(ir::ValueId v, int64_t axis) {
  const ir::Value& val = g_.value(v);
  const int64_t r = static_cast<int64_t>(val.dims.size());
  if (!val.has_shape || axis < -r || axis >= r) return std::nullopt;
  if (axis < 0) axis += r;
  if (val.dims[axis] >= 0) return SymDim{ir::kNoValue, val.dims[axis]};
  auto key = std::make_pair(v, axis);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  // Tracing recurses once per op up the graph: past kMaxDepth (a chain of thousands of
  // element-wise ops) the dim stays its own symbol rather than overflowing the stack.
  if (depth_ >= kMaxDepth) return SymDim{v, axis};
  ++depth_;
  SymDim d = trace(v, axis).value_or(named_input_dim(v, axis));
  --depth_;
  memo_[key] = d;
  return d;
}

// A graph input's dim that the model names (dim_param) is the first graph input dim of that name:
// input_ids [batch, seq] and a KV cache [batch, heads, past, dim] share their batch.
SymDim DimTracer::named_input_dim(ir::ValueId v, int64_t axis) const {
  auto it = g_.input_dim_params.find(v);
  if (it == g_.input_dim_params.end() || axis >= static_cast<int64_t>(it->second.size()) ||
      it->second[static_cast<size_t>(axis)].empty())
    return SymDim{v, axis};
  const std::string& name = it->second[static_cast<size_t>(axis)];
  for (ir::ValueId in : g_.inputs) {  // in input order: one canonical dim per name
    auto p = g_.input_dim_params.find(in);
    if (p == g_.input_dim_params.end()) continue;
    for (size_t a = 0; a < p->second.size(); ++a)
      if (p->second[a] == name) return SymDim{in, static_cast<int64_t>(a)};
  }
  return SymDim{v, axis};
}

std::optional<SymDim> DimTracer::element(ir::ValueId v, int64_t k) {
  if (const Tensor* t = g_.constant(v)) {
    auto x = t->to_int64_vector();
    if (!x.ok() || k < 0 || k >= static_cast<int64_t>(x->size())) return std::nullopt;
    return SymDim{ir::kNoValue, (*x)[k]};
  }
  const int p = idx_.producer(v);
  if (p < 0) return std::nullopt;
  const ir::Node& n = g_.nodes[p];
  const std::string& op = n.op_type;
  if (op == "Shape") {
    const int64_t r = rank_or_zero(g_, n.inputs[0]);
    auto start = int_attr(n, "start", 0);
    if (!start) return std::nullopt;
    return dim(n.inputs[0], (*start < 0 ? *start + r : *start) + k);
  }
  if (op == "Gather" && int_attr(n, "axis", 0) == 0) {
    const Tensor* ind = g_.constant(n.inputs[1]);
    if (!ind) return std::nullopt;
    auto i = ind->to_int64_vector();
    if (!i.ok() || k < 0 || k >= static_cast<int64_t>(i->size())) return std::nullopt;
    int64_t at = (*i)[k];
    if (at < 0) {
      const ir::Value& data = g_.value(n.inputs[0]);
      if (!data.has_shape || data.dims.size() != 1 || data.dims[0] < 0) return std::nullopt;
      at += data.dims[0];
    }
    return element(n.inputs[0], at);
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Cast" || op == "Identity" || op == "Reshape")
    return element(n.inputs[0], k);
  if (op == "Slice") return slice_element(n, k);
  if (op == "Add" || op == "Mul") return arith_element(n, k);
  if (op == "Where") return unset_dims_element(n, k);
  if (op == "Concat") {
    for (ir::ValueId in : n.inputs) {
      const ir::Value& piece = g_.value(in);
      if (!piece.has_shape || piece.dims.size() != 1 || piece.dims[0] < 0) return std::nullopt;
      if (k < piece.dims[0]) return element(in, k);
      k -= piece.dims[0];
    }
  }
  return std::nullopt;
}

std::optional<SymDim> DimTracer::trace(ir::ValueId v, int64_t axis) {
  const int p = idx_.producer(v);
  if (p < 0) return std::nullopt;
  const ir::Node& n = g_.nodes[p];
  const std::string& op = n.op_type;
  const int64_t r = rank_or_zero(g_, v);
  // Split (a fused QKV projection): every piece keeps the input's dims off the split axis.
  if (op == "Split" && n.domain.empty() && !n.inputs.empty() && rank_or_zero(g_, n.inputs[0]) == r) {
    auto a = int_attr(n, "axis", 0);
    return a && (*a < 0 ? *a + r : *a) != axis ? dim(n.inputs[0], axis) : std::nullopt;
  }
  if (!n.domain.empty() || n.inputs.empty() || n.outputs[0] != v) return std::nullopt;
  static const char* const kSameShape[] = {"Cast", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt",
                                           "Reciprocal", "Erf", "Abs", "Not", "Identity", "Softmax",
                                           "RMSNormalization", "LayerNormalization", "Rotary", "Cos", "Sin",
                                           "Floor", "Ceil", "Round", "Sign", "Gelu", "Softplus", "IsNaN",
                                           "IsInf", "CastLike", "Trilu", "CumSum", "LogSoftmax"};
  for (const char* s : kSameShape)
    if (op == s) return dim(n.inputs[0], axis);
  static const char* const kBroadcast[] = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Max", "Min", "Mod",
                                           "And", "Or", "Xor", "Equal", "Less", "LessOrEqual", "Greater",
                                           "GreaterOrEqual"};
  for (const char* b : kBroadcast)
    if (op == b) return broadcast(n, r, axis);
  if (op == "Transpose") {
    auto perm = n.attr_ints("perm", std::vector<int64_t>{});
    if (!perm.ok() || perm->empty()) return dim(n.inputs[0], r - 1 - axis);
    return perm->size() == static_cast<size_t>(r) ? dim(n.inputs[0], (*perm)[axis]) : std::nullopt;
  }
  if (op == "Attention") return attention(n, r, axis);
  if (op == "MatMul") {  // rows come from the first operand
    const bool matrices = rank_or_zero(g_, n.inputs[0]) >= 2 && n.inputs.size() > 1 && rank_or_zero(g_, n.inputs[1]) >= 2;
    if (!matrices) return std::nullopt;
    if (axis == r - 2) return dim(n.inputs[0], -2);
    if (axis == r - 1) return dim(n.inputs[1], -1);
    std::vector<SymDim> ds;
    for (int k = 0; k < 2; ++k) {
      const int64_t rk = rank_or_zero(g_, n.inputs[k]), a = axis - (r - rk);
      if (a < 0) continue;
      auto d = dim(n.inputs[k], a);
      if (!d) return std::nullopt;
      ds.push_back(*d);
    }
    return broadcast_of(ds);
  }
  if (op.rfind("Reduce", 0) == 0) return reduce(n, axis);
  if (op == "Gather" && n.inputs.size() == 2) {  // data[:a] + indices + data[a + 1:]
    const int64_t rd = rank_or_zero(g_, n.inputs[0]), ri = static_cast<int64_t>(g_.value(n.inputs[1]).dims.size());
    auto a = int_attr(n, "axis", 0);
    if (!a || rd == 0 || !g_.value(n.inputs[1]).has_shape) return std::nullopt;
    const int64_t ax = *a < 0 ? *a + rd : *a;
    if (axis < ax) return dim(n.inputs[0], axis);
    if (axis < ax + ri) return dim(n.inputs[1], axis - ax);
    return dim(n.inputs[0], axis - ri + 1);
  }
  if (op == "Reshape" && n.inputs.size() == 2) {
    auto e = element(n.inputs[1], axis);
    if (e && e->is(-1)) return inferred_reshape_dim(n, axis);
    if (!e || (e->is_static() && e->n < 0)) return std::nullopt;
    if (e->is_static() && e->n == 0)
      return int_attr(n, "allowzero", 0) == 0 ? dim(n.inputs[0], axis) : std::nullopt;
    return e;
  }
  if (op == "Concat") return concat(n, axis);
  if (op == "Slice") return slice(n, r, axis);
  if (op == "Unsqueeze" || op == "Squeeze") return squeeze_family(n, r, axis);
  if (op == "Expand" && n.inputs.size() == 2) return expand(n, r, axis);
  if (op == "GatherND" && n.inputs.size() == 2) return gather_nd(n, axis);
  if (op == "Range" && n.inputs.size() == 3) return range(n);
  return std::nullopt;
}

// Unsqueeze: an inserted axis is 1, the others are the input's in order. Squeeze: the output's
// axes are the input's that were not removed (with axes absent, every static 1; a -1 could be 1,
// so the input must have none).
std::optional<SymDim> DimTracer::squeeze_family(const ir::Node& n, int64_t r, int64_t axis) {
  const bool unsqueeze = n.op_type == "Unsqueeze";
  auto given = squeeze_axes(g_, n);
  if (!given) return std::nullopt;
  const std::vector<int64_t>& axes = *given;
  const ir::Value& in = g_.value(n.inputs[0]);
  if (!in.has_shape) return std::nullopt;
  const int64_t ri = static_cast<int64_t>(in.dims.size());
  const int64_t base = unsqueeze ? r : ri;  // the rank the axes count in
  std::vector<bool> marked(static_cast<size_t>(base), false);
  for (int64_t a : axes) {
    const int64_t x = a < 0 ? a + base : a;
    if (x < 0 || x >= base) return std::nullopt;
    marked[static_cast<size_t>(x)] = true;
  }
  if (!unsqueeze && axes.empty())
    for (int64_t i = 0; i < ri; ++i) {
      if (in.dims[i] < 0) return std::nullopt;
      marked[static_cast<size_t>(i)] = in.dims[i] == 1;
    }
  if (unsqueeze) {
    if (marked[static_cast<size_t>(axis)]) return SymDim{ir::kNoValue, 1};
    int64_t before = 0;
    for (int64_t i = 0; i < axis; ++i) before += marked[static_cast<size_t>(i)];
    return dim(n.inputs[0], axis - before);
  }
  for (int64_t i = 0, kept = 0; i < ri; ++i) {
    if (marked[static_cast<size_t>(i)]) continue;
    if (kept++ == axis) return dim(n.inputs[0], i);
  }
  return std::nullopt;
}

// Expand(x, shape) broadcasts x against the shape's elements (right-aligned).
std::optional<SymDim> DimTracer::expand(const ir::Node& n, int64_t r, int64_t axis) {
  const int64_t rx = rank_or_zero(g_, n.inputs[0]);
  const ir::Value& shape = g_.value(n.inputs[1]);
  if (!g_.value(n.inputs[0]).has_shape || !shape.has_shape || shape.dims.size() != 1 || shape.dims[0] < 0)
    return std::nullopt;
  std::vector<SymDim> ds;
  if (const int64_t a = axis - (r - rx); a >= 0) {
    auto d = dim(n.inputs[0], a);
    if (!d) return std::nullopt;
    ds.push_back(*d);
  }
  if (const int64_t k = axis - (r - shape.dims[0]); k >= 0) {
    auto e = element(n.inputs[1], k);
    if (!e || (e->is_static() && e->n < 0)) return std::nullopt;
    ds.push_back(*e);
  }
  return broadcast_of(ds);
}

// Attention (ops/attention.h): rows are Q's, the last dim V's and the leading dims Q's, where Q
// has them (a Q dim of 1 may broadcast against K, V or the mask: not traced); bshd layouts permute.
std::optional<SymDim> DimTracer::attention(const ir::Node& n, int64_t r, int64_t axis) {
  auto bits = int_attr(n, "bshd", 0);
  if (!bits || n.inputs.size() < 3 || rank_or_zero(g_, n.inputs[0]) != r || r < 2) return std::nullopt;
  auto physical = [&](int64_t logical, int bit) { return (*bits & bit) && r == 4 && (logical == 1 || logical == 2) ? 3 - logical : logical; };
  const int64_t logical = physical(axis, ops::kBshdY);
  if (logical == r - 1) return dim(n.inputs[2], -1);
  auto d = dim(n.inputs[0], physical(logical, ops::kBshdQ));
  if (logical >= r - 2 || !d || !d->is(1)) return d;
  // A leading axis of size 1 in Q broadcasts against K, V and the mask: 1 only when theirs are too.
  for (size_t k = 1; k < n.inputs.size() && k < 4; ++k) {
    if (n.inputs[k] == ir::kNoValue) continue;
    const int64_t rk = rank_or_zero(g_, n.inputs[k]), at = logical - (r - rk);
    if (at < 0) continue;  // fewer dims than the scores: broadcast along this axis
    auto e = dim(n.inputs[k], k == 1 ? physical(at, ops::kBshdK) : k == 2 ? physical(at, ops::kBshdV) : at);
    if (!e || !e->is(1)) return std::nullopt;
  }
  return d;
}

// Reduce*(x, axes): the axes not reduced are x's; kept reduced axes are 1. Axes from the input
// (ReduceSum from opset 13, the others from 18) or the attribute; none given: all, unless
// noop_with_empty_axes.
std::optional<SymDim> DimTracer::reduce(const ir::Node& n, int64_t axis) {
  const int64_t rx = rank_or_zero(g_, n.inputs[0]);
  auto keep = int_attr(n, "keepdims", 1), noop = int_attr(n, "noop_with_empty_axes", 0);
  if (!keep || !noop || rx == 0) return std::nullopt;
  std::vector<int64_t> axes;
  if (n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue) {
    const Tensor* t = g_.constant(n.inputs[1]);
    auto v = t ? t->to_int64_vector() : Result<std::vector<int64_t>>(invalid_argument(""));
    if (!v.ok()) return std::nullopt;
    axes = *v;
  } else if (auto a = n.attr_ints("axes", std::vector<int64_t>{}); a.ok()) {
    axes = *a;
  } else {
    return std::nullopt;
  }
  if (axes.empty() && *noop) return dim(n.inputs[0], axis);
  std::vector<bool> reduced(static_cast<size_t>(rx), axes.empty());
  for (int64_t a : axes) {
    const int64_t x = a < 0 ? a + rx : a;
    if (x < 0 || x >= rx) return std::nullopt;
    reduced[static_cast<size_t>(x)] = true;
  }
  for (int64_t i = 0, out = 0; i < rx; ++i) {
    if (reduced[static_cast<size_t>(i)] && !*keep) continue;
    if (out++ == axis) return reduced[static_cast<size_t>(i)] ? SymDim{ir::kNoValue, 1} : dim(n.inputs[0], i);
  }
  return std::nullopt;
}

// GatherND(data, indices) with batch_dims 0: indices' dims but the last, then data's past the
// indexed ones (as many as indices' static last dim).
std::optional<SymDim> DimTracer::gather_nd(const ir::Node& n, int64_t axis) {
  if (int_attr(n, "batch_dims", 0) != 0) return std::nullopt;
  const ir::Value& ind = g_.value(n.inputs[1]);
  if (!ind.has_shape || ind.dims.empty() || ind.dims.back() < 0) return std::nullopt;
  const int64_t lead = static_cast<int64_t>(ind.dims.size()) - 1;
  return axis < lead ? dim(n.inputs[1], axis) : dim(n.inputs[0], axis - lead + ind.dims.back());
}

// Range(start, limit, 1) with start a constant 0 has limit elements.
std::optional<SymDim> DimTracer::range(const ir::Node& n) {
  auto start = element(n.inputs[0], 0);
  auto delta = element(n.inputs[2], 0);
  if (!start || !start->is(0) || !delta || !delta->is(1)) return std::nullopt;
  auto limit = element(n.inputs[1], 0);
  if (!limit || (limit->is_static() && limit->n < 0)) return std::nullopt;
  return limit;
}

std::optional<SymDim> DimTracer::broadcast(const ir::Node& n, int64_t r, int64_t axis) {
  std::vector<SymDim> ds;
  for (ir::ValueId in : n.inputs) {
    const int64_t ri = rank_or_zero(g_, in), a = axis - (r - ri);
    if (!g_.value(in).has_shape) return std::nullopt;
    if (a < 0) continue;  // the operand broadcasts along this axis
    auto d = dim(in, a);
    if (!d) return std::nullopt;
    ds.push_back(*d);
  }
  return broadcast_of(ds);
}

// The size of dims broadcast together (nullopt where they cannot be proven compatible).
std::optional<SymDim> DimTracer::broadcast_of(std::vector<SymDim> ds) {
  std::erase_if(ds, [](const SymDim& d) { return d.is(1); });
  if (ds.empty()) return SymDim{ir::kNoValue, 1};
  for (const SymDim& d : ds)  // a static size other than 1 is the result
    if (d.is_static()) return d;
  // min(R, N) broadcast with R: R (equal, or N == 1; otherwise the op fails).
  std::optional<SymDim> out;
  for (const SymDim& d : ds) {
    if (out && (out->root != d.root || out->n != d.n || out->plus != d.plus || out->root2 != d.root2 ||
                out->n2 != d.n2 || (out->cap != d.cap && out->cap && d.cap)))
      return std::nullopt;
    if (!out || d.cap == 0) out = d;
  }
  return out;
}

std::optional<SymDim> DimTracer::slice(const ir::Node& n, int64_t r, int64_t axis) {
  if (!constant_or_absent(g_, n, 3) || !constant_or_absent(g_, n, 4)) return std::nullopt;
  auto axes = const_ints(g_, n, 3, "axes").value_or(std::vector<int64_t>{});
  if (axes.empty()) {  // absent: the first len(starts) axes
    const ir::Value* sv = n.opset >= 10 && n.inputs.size() > 1 ? &g_.value(n.inputs[1]) : nullptr;
    auto starts = const_ints(g_, n, 1, "starts");
    const int64_t len = starts ? static_cast<int64_t>(starts->size())
                        : sv && sv->has_shape && sv->dims.size() == 1 ? sv->dims[0]
                                                                      : -1;
    if (len < 0) return std::nullopt;
    for (int64_t i = 0; i < len; ++i) axes.push_back(i);
  }
  bool touched = false;
  for (int64_t a : axes) touched = touched || (a < 0 ? a + r : a) == axis;
  if (!touched) return dim(n.inputs[0], axis);
  auto starts = const_ints(g_, n, 1, "starts");
  if (!starts || axes.size() != starts->size()) return std::nullopt;
  for (size_t i = 0; i < axes.size(); ++i) {
    if ((axes[i] < 0 ? axes[i] + r : axes[i]) != axis) continue;
    auto steps = const_ints(g_, n, 4, "steps");
    if ((*starts)[i] != 0 || (steps && (steps->size() != axes.size() || (*steps)[i] != 1))) return std::nullopt;
    auto in = dim(n.inputs[0], axis);
    std::optional<SymDim> end;
    if (n.opset < 10) {
      auto ends = const_ints(g_, n, 2, "ends");
      if (ends && ends->size() == axes.size()) end = SymDim{ir::kNoValue, (*ends)[i]};
    } else if (n.inputs.size() > 2) {
      end = element(n.inputs[2], static_cast<int64_t>(i));
    }
    if (!in || !in->is_static() || in->n < 1 || !end || end->cap != 0 || end->plus != 0 || end->root2 != ir::kNoValue)
      return std::nullopt;
    if (end->is_static()) return end->n < 0 ? std::nullopt : std::optional(SymDim{ir::kNoValue, std::min(end->n, in->n)});
    return SymDim{end->root, end->n, in->n};
  }
  return dim(n.inputs[0], axis);
}

// The -1 of Reshape(x, shape) at `axis`: x's dims and the shape's other entries, with the symbolic
// ones that appear on both sides cancelled, must leave static sizes whose quotient it is
// ([B, S, 16] -> [B, S, -1, 8] gives 2 at any B and S), or one symbolic dim times a quotient of 1.
std::optional<SymDim> DimTracer::inferred_reshape_dim(const ir::Node& n, int64_t axis) {
  const int64_t rin = rank_or_zero(g_, n.inputs[0]), rout = rank_or_zero(g_, n.outputs[0]);
  if (rin == 0 || rout == 0) return std::nullopt;
  std::vector<SymDim> in;
  int64_t num = 1, den = 1;
  for (int64_t i = 0; i < rin; ++i) {
    auto d = dim(n.inputs[0], i);
    if (!d) return std::nullopt;
    if (d->is_static()) num *= d->n;
    else in.push_back(*d);
  }
  const bool allowzero = int_attr(n, "allowzero", 0) != 0;
  for (int64_t j = 0; j < rout; ++j) {
    if (j == axis) continue;
    auto e = element(n.inputs[1], j);
    if (e && e->is(0) && !allowzero && j < rin) e = dim(n.inputs[0], j);  // 0 copies the input's dim
    if (!e || (e->is_static() && e->n <= 0)) return std::nullopt;  // a second -1: not handled
    if (e->is_static()) {
      den *= e->n;
      continue;
    }
    auto it = std::find(in.begin(), in.end(), *e);
    if (it == in.end()) return std::nullopt;
    in.erase(it);
  }
  if (den == 0) return std::nullopt;
  // One symbolic dim left over and the static sizes cancel: the -1 is that dim ([B, 1, 32] ->
  // [-1, 1, 4, 8]).
  if (in.size() == 1 && num == den) return in[0];
  if (!in.empty() || num % den != 0) return std::nullopt;
  return SymDim{ir::kNoValue, num / den};
}

// Along its axis a Concat's dim is the sum of its inputs' (at most two of them symbolic);
// elsewhere it is the first input's.
std::optional<SymDim> DimTracer::concat(const ir::Node& n, int64_t axis) {
  auto a = n.attr_int("axis");
  if (!a.ok()) return std::nullopt;
  const int64_t r = rank_or_zero(g_, n.outputs[0]);
  if ((*a < 0 ? *a + r : *a) != axis) return dim(n.inputs[0], axis);
  std::optional<SymDim> sum = SymDim{ir::kNoValue, 0};
  for (ir::ValueId in : n.inputs) {
    auto d = dim(in, axis);
    if (!d) return std::nullopt;
    sum = add(*sum, *d);
    if (!sum) return std::nullopt;
  }
  return sum;
}

// Slice(v, [s], [e]) of a 1-D tensor of static length, step 1 (shape[-1:], shape[-2:-1], ...).
std::optional<SymDim> DimTracer::slice_element(const ir::Node& n, int64_t k) {
  const ir::Value& in = g_.value(n.inputs[0]);
  if (!in.has_shape || in.dims.size() != 1 || in.dims[0] < 0 || !constant_or_absent(g_, n, 4)) return std::nullopt;
  auto starts = const_ints(g_, n, 1, "starts");
  auto steps = const_ints(g_, n, 4, "steps");
  if (!starts || starts->size() != 1 || (steps && (steps->size() != 1 || (*steps)[0] != 1))) return std::nullopt;
  const int64_t len = in.dims[0];
  int64_t s = (*starts)[0];
  s = s < 0 ? std::max<int64_t>(s + len, 0) : std::min(s, len);
  const ir::Value& out = g_.value(n.outputs[0]);
  if (!out.has_shape || out.dims.size() != 1 || k < 0 || out.dims[0] < 0 || k >= out.dims[0]) return std::nullopt;
  return element(n.inputs[0], s + k);
}

// Where(Equal(x, -1), fill, x): the TorchScript exporter's guard on an Expand shape. A size is
// never -1, so the element of x passes through wherever it is one, and where x holds a known -1
// (a dim the exporter leaves to broadcasting) the element is fill's.
std::optional<SymDim> DimTracer::unset_dims_element(const ir::Node& n, int64_t k) {
  if (n.inputs.size() != 3) return std::nullopt;
  const ir::ValueId x = n.inputs[2];
  const int eq = idx_.producer_if(n.inputs[0], "Equal");
  if (eq < 0 || g_.nodes[eq].inputs.size() != 2) return std::nullopt;
  const ir::Node& e = g_.nodes[eq];
  const ir::ValueId other = e.inputs[0] == x ? e.inputs[1] : e.inputs[1] == x ? e.inputs[0] : ir::kNoValue;
  const Tensor* minus_one = other != ir::kNoValue ? g_.constant(other) : nullptr;
  auto ones = minus_one ? minus_one->to_int64_vector() : Result<std::vector<int64_t>>(invalid_argument(""));
  if (!ones.ok() || ones->empty() || std::any_of(ones->begin(), ones->end(), [](int64_t v) { return v != -1; }))
    return std::nullopt;
  auto d = element(x, k);
  if (d && d->is(-1)) return element(n.inputs[1], k);  // the guard's own replacement (1 for Expand)
  if (!d || (d->is_static() && d->n < 0)) return std::nullopt;
  return d;
}

// Add or Mul of two int tensors, element k (a one-element operand broadcasts); a product only of
// static sizes (a SymDim has no factor).
std::optional<SymDim> DimTracer::arith_element(const ir::Node& n, int64_t k) {
  if (n.inputs.size() != 2) return std::nullopt;
  std::optional<SymDim> parts[2];
  for (int i = 0; i < 2; ++i) {
    const ir::Value& v = g_.value(n.inputs[i]);
    if (!v.has_shape || v.dims.size() > 1) return std::nullopt;
    const bool one = v.dims.empty() || v.dims[0] == 1;
    parts[i] = element(n.inputs[i], one ? 0 : k);
    if (!parts[i] || parts[i]->cap != 0) return std::nullopt;
  }
  if (n.op_type == "Add") return add(*parts[0], *parts[1]);
  if (parts[0]->is_static() && parts[1]->is_static()) return SymDim{ir::kNoValue, parts[0]->n * parts[1]->n};
  if (parts[0]->is(1)) return parts[1];
  if (parts[1]->is(1)) return parts[0];
  return std::nullopt;
}

}  // namespace streamrt::builder
