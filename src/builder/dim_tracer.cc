// DimTracer (see dim_tracer.h).
#include "builder/dim_tracer.h"

#include <algorithm>

namespace streamrt::builder {
namespace {

// An int attribute (`def` when absent), nullopt when it has the wrong kind.
std::optional<int64_t> int_attr(const ir::Node& n, const char* key, int64_t def) {
  auto a = n.attr_int(key, def);
  return a.ok() ? std::optional(*a) : std::nullopt;
}

int64_t rank_or_zero(const ir::Graph& g, ir::ValueId v) { return static_cast<int64_t>(rank_of(g, v)); }

// a + b where at most one is symbolic.
std::optional<SymDim> add(const SymDim& a, const SymDim& b) {
  if (!a.is_static() && !b.is_static()) return std::nullopt;
  if (a.is_static() && b.is_static()) return SymDim{ir::kNoValue, a.n + b.n};
  SymDim s = a.is_static() ? b : a;
  s.plus += a.is_static() ? a.n : b.n;
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
  SymDim d = trace(v, axis).value_or(SymDim{v, axis});
  --depth_;
  memo_[key] = d;
  return d;
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
  if (op == "Add") return add_element(n, k);
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
  if (!n.domain.empty() || n.inputs.empty() || n.outputs[0] != v) return std::nullopt;
  const std::string& op = n.op_type;
  const int64_t r = rank_or_zero(g_, v);
  static const char* const kSameShape[] = {"Cast", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt",
                                           "Reciprocal", "Erf", "Abs", "Not", "Identity", "Softmax",
                                           "RMSNormalization", "LayerNormalization", "Rotary"};
  for (const char* s : kSameShape)
    if (op == s) return dim(n.inputs[0], axis);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Where")
    return broadcast(n, r, axis);
  if (op == "Transpose") {
    auto perm = n.attr_ints("perm", std::vector<int64_t>{});
    if (!perm.ok() || perm->empty()) return dim(n.inputs[0], r - 1 - axis);
    return perm->size() == static_cast<size_t>(r) ? dim(n.inputs[0], (*perm)[axis]) : std::nullopt;
  }
  if (op == "MatMul" || op == "Attention") {  // rows come from the first operand (Q)
    const bool matrices = rank_or_zero(g_, n.inputs[0]) >= 2 && n.inputs.size() > 1 && rank_or_zero(g_, n.inputs[1]) >= 2;
    if (!matrices) return std::nullopt;
    if (axis == r - 2) return dim(n.inputs[0], -2);
    // Batch dims of x @ W with a 2-D W (a projection) are x's.
    if (op == "MatMul" && axis < r - 2 && rank_or_zero(g_, n.inputs[1]) == 2 && rank_or_zero(g_, n.inputs[0]) == r)
      return dim(n.inputs[0], axis);
    return std::nullopt;
  }
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
  return std::nullopt;
}

std::optional<SymDim> DimTracer::broadcast(const ir::Node& n, int64_t r, int64_t axis) {
  std::vector<SymDim> ds;
  for (ir::ValueId in : n.inputs) {
    const int64_t ri = rank_or_zero(g_, in), a = axis - (r - ri);
    if (!g_.value(in).has_shape) return std::nullopt;
    if (a < 0) continue;  // the operand broadcasts along this axis
    auto d = dim(in, a);
    if (!d) return std::nullopt;
    if (!(d->is_static() && d->n == 1)) ds.push_back(*d);
  }
  if (ds.empty()) return SymDim{ir::kNoValue, 1};
  for (const SymDim& d : ds)  // a static size other than 1 is the result
    if (d.is_static()) return d;
  // min(R, N) broadcast with R: R (equal, or N == 1; otherwise the op fails).
  std::optional<SymDim> out;
  for (const SymDim& d : ds) {
    if (out && (out->root != d.root || out->n != d.n || out->plus != d.plus || (out->cap != d.cap && out->cap && d.cap))) return std::nullopt;
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
    if (!in || !in->is_static() || in->n < 1 || !end || end->cap != 0 || end->plus != 0) return std::nullopt;
    if (end->is_static()) return end->n < 0 ? std::nullopt : std::optional(SymDim{ir::kNoValue, std::min(end->n, in->n)});
    return SymDim{end->root, end->n, in->n};
  }
  return dim(n.inputs[0], axis);
}

// The -1 of Reshape(x, shape) at `axis`: x's dims and the shape's other entries, with the symbolic
// ones that appear on both sides cancelled, must leave static sizes whose quotient it is
// ([B, S, 16] -> [B, S, -1, 8] gives 2 at any B and S).
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
  for (int64_t j = 0; j < rout; ++j) {
    if (j == axis) continue;
    auto e = element(n.inputs[1], j);
    if (!e || (e->is_static() && e->n <= 0)) return std::nullopt;  // 0 copies, a second -1: not handled
    if (e->is_static()) {
      den *= e->n;
      continue;
    }
    auto it = std::find(in.begin(), in.end(), *e);
    if (it == in.end()) return std::nullopt;
    in.erase(it);
  }
  if (!in.empty() || den == 0 || num % den != 0) return std::nullopt;
  return SymDim{ir::kNoValue, num / den};
}

// Along its axis a Concat's dim is the sum of its inputs' (one of them symbolic at most);
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

// Add of two int tensors, element k (a one-element operand broadcasts).
std::optional<SymDim> DimTracer::add_element(const ir::Node& n, int64_t k) {
  if (n.inputs.size() != 2) return std::nullopt;
  std::optional<SymDim> parts[2];
  for (int i = 0; i < 2; ++i) {
    const ir::Value& v = g_.value(n.inputs[i]);
    if (!v.has_shape || v.dims.size() > 1) return std::nullopt;
    const bool one = v.dims.empty() || v.dims[0] == 1;
    parts[i] = element(n.inputs[i], one ? 0 : k);
    if (!parts[i] || parts[i]->cap != 0) return std::nullopt;
  }
  return add(*parts[0], *parts[1]);
}

}  // namespace streamrt::builder
