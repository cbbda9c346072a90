// Symbolic element forms of attention-mask tensors (see mask_forms.h).
#include "builder/mask_forms.h"

#include <algorithm>

namespace streamrt::builder {
namespace {

// Values the forms hold stay far inside int64, so sums and products of two cannot overflow it.
constexpr int64_t kMaxMagnitude = int64_t{1} << 62;
// Integer constants read element by element (index tensors of a static build), copied as int64.
constexpr int64_t kMaxConstantElements = int64_t{1} << 22;
// Bool masks of a static build, scanned in place: a prompt of 16k tokens folds its causal band
// (4096 tokens already made a 16M-element constant that the old, shared 4M limit left as an S x S
// mask read per element: 3.7 ms a layer on an H200 against 0.27 folded).
constexpr int64_t kMaxBandElements = int64_t{1} << 28;

std::optional<int64_t> checked(__int128 v) {
  if (v > kMaxMagnitude || v < -kMaxMagnitude) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<Lin> lin_scale(const Lin& a, int64_t k) {
  Lin out;
  auto c = checked(static_cast<__int128>(a.c) * k);
  if (!c) return std::nullopt;
  out.c = *c;
  for (const auto& [sym, v] : a.s) {
    auto x = checked(static_cast<__int128>(v) * k);
    if (!x) return std::nullopt;
    if (*x) out.s[sym] = *x;
  }
  return out;
}

std::optional<Affine> affine_add(const Affine& a, const Affine& b, int64_t k) {
  Affine out = a;
  auto c = lin_add(a.c, b.c, k);
  if (!c) return std::nullopt;
  out.c = *c;
  for (const auto& [axis, coef] : b.x) {
    auto sum = lin_add(out.x.count(axis) ? out.x[axis] : Lin{}, coef, k);
    if (!sum) return std::nullopt;
    if (sum->is(0)) out.x.erase(axis);
    else out.x[axis] = *sum;
  }
  return out;
}

// a * b where one of them has no index term (and the product needs no product of two symbols).
std::optional<Affine> affine_mul(const Affine& a, const Affine& b) {
  if (!a.x.empty() && !b.x.empty()) return std::nullopt;
  const Affine& scalar = a.x.empty() ? a : b;
  const Affine& other = a.x.empty() ? b : a;
  Affine out;
  auto c = lin_mul(other.c, scalar.c);
  if (!c) return std::nullopt;
  out.c = *c;
  for (const auto& [axis, coef] : other.x) {
    auto m = lin_mul(coef, scalar.c);
    if (!m) return std::nullopt;
    if (!m->is(0)) out.x[axis] = *m;
  }
  return out;
}

Affine index(int axis) { return Affine{Lin{}, {{axis, Lin::of(1)}}}; }

// Row-major strides of static dims.
std::vector<int64_t> strides_of(const Dims& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t a = d.size(); a-- > 1;) s[a - 1] = s[a] * d[a];
  return s;
}

// values (row-major over `dims`) as c + sum coef_a * x_a, when they are exactly that.
std::optional<Affine> fit_affine(const std::vector<int64_t>& v, const Dims& dims) {
  if (v.empty()) return std::nullopt;
  const std::vector<int64_t> st = strides_of(dims);
  Affine f{Lin::of(v[0]), {}};
  for (size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] <= 1) continue;
    auto coef = checked(static_cast<__int128>(v[static_cast<size_t>(st[a])]) - v[0]);
    if (!coef) return std::nullopt;
    if (*coef) f.x[static_cast<int>(a)] = Lin::of(*coef);
  }
  std::vector<int64_t> at(dims.size(), 0);
  for (size_t e = 0; e < v.size(); ++e) {
    __int128 want = f.c.c;
    for (const auto& [axis, coef] : f.x) want += static_cast<__int128>(coef.c) * at[static_cast<size_t>(axis)];
    if (want != v[e]) return std::nullopt;
    for (size_t a = dims.size(); a-- > 0;)  // next index, row-major
      if (++at[a] < dims[a]) break;
      else at[a] = 0;
  }
  return f;
}

// A constant bool [1, ..., 1, R, C] mask that is a band: true where j - i <= upper and
// i - j <= lower (each bound optional), i and j its last two axes.
std::optional<MaskForm> fit_band(const Tensor& t) {
  const Dims& d = t.dims();
  const uint8_t* b = t.data_as<uint8_t>();
  const int64_t n = t.numel();
  MaskForm f{MaskForm::Kind::kBool, {}, {}, {}, {}};
  if (n > 0 && std::all_of(b, b + n, [](uint8_t x) { return x != 0; })) return f;
  const size_t r = d.size();
  if (n == 0 || r < 2) return std::nullopt;
  for (size_t a = 0; a + 2 < r; ++a)
    if (d[a] != 1) return std::nullopt;
  const int64_t rows = d[r - 2], cols = d[r - 1];
  std::optional<int64_t> upper, lower;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t lo = -1, hi = -1;
    for (int64_t j = 0; j < cols; ++j)
      if (b[i * cols + j]) hi = j, lo = lo < 0 ? j : lo;
    if (hi < 0) continue;
    if (hi < cols - 1 && !upper) upper = hi - i;
    if (lo > 0 && !lower) lower = i - lo;
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if ((b[i * cols + j] != 0) != ((!upper || j - i <= *upper) && (!lower || i - j <= *lower))) return std::nullopt;
  const int ai = static_cast<int>(r - 2), aj = static_cast<int>(r - 1);
  if (upper) f.le.push_back(Affine{Lin::of(-*upper), {{aj, Lin::of(1)}, {ai, Lin::of(-1)}}});
  if (lower) f.le.push_back(Affine{Lin::of(-*lower), {{ai, Lin::of(1)}, {aj, Lin::of(-1)}}});
  return f;
}

std::optional<MaskForm> constant_form(const Tensor& t) {
  if (t.dtype() == DataType::kBool) return t.numel() <= kMaxBandElements ? fit_band(t) : std::nullopt;
  if (t.numel() > kMaxConstantElements) return std::nullopt;
  if (!is_integer(t.dtype())) return std::nullopt;
  auto v = t.to_int64_vector();
  if (!v.ok()) return std::nullopt;
  auto f = fit_affine(*v, t.dims());
  if (!f) return std::nullopt;
  return MaskForm{MaskForm::Kind::kInt, *f, {}, {}, {}};
}

bool is_op(const ir::Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

int64_t rank(const ir::Graph& g, ir::ValueId v) { return static_cast<int64_t>(rank_of(g, v)); }

}  // namespace

Lin Lin::of(const SymDim& d) {
  if (d.is_static()) return of(d.n);
  Lin l{d.plus, {{Symbol{d.root, d.n, d.cap}, 1}}};
  // The sum of two root dims (a cache's past plus the new tokens): both terms (DimTracer orders
  // them, and never caps such a sum).
  if (d.root2 != ir::kNoValue) l.s[Symbol{d.root2, d.n2, 0}] += 1;
  return l;
}

std::optional<Lin> lin_add(const Lin& a, const Lin& b, int64_t k) {
  auto kb = lin_scale(b, k);
  if (!kb) return std::nullopt;
  Lin out = a;
  auto c = checked(static_cast<__int128>(a.c) + kb->c);
  if (!c) return std::nullopt;
  out.c = *c;
  for (const auto& [sym, v] : kb->s) {
    auto x = checked(static_cast<__int128>(out.s.count(sym) ? out.s[sym] : 0) + v);
    if (!x) return std::nullopt;
    if (*x) out.s[sym] = *x;
    else out.s.erase(sym);
  }
  return out;
}

std::optional<Lin> lin_mul(const Lin& a, const Lin& b) {
  if (a.is_static()) return lin_scale(b, a.c);
  if (b.is_static()) return lin_scale(a, b.c);
  return std::nullopt;
}

Affine remap(const Affine& a, const std::vector<int>& to) {
  Affine out{a.c, {}};
  for (const auto& [axis, coef] : a.x)
    if (axis < static_cast<int>(to.size()) && to[static_cast<size_t>(axis)] >= 0) out.x[to[static_cast<size_t>(axis)]] = coef;
  return out;
}

MaskForm remap(const MaskForm& f, const std::vector<int>& to) {
  MaskForm out = f;
  out.value = remap(f.value, to);
  for (Affine& d : out.le) d = remap(d, to);
  for (KeyRead& k : out.keys) k.row = remap(k.row, to), k.col = remap(k.col, to);
  out.read.row = remap(f.read.row, to);
  out.read.col = remap(f.read.col, to);
  return out;
}

std::optional<MaskForm> MaskForms::form(ir::ValueId v) {
  if (v == ir::kNoValue) return std::nullopt;
  if (auto it = memo_.find(v); it != memo_.end()) return it->second;
  if (depth_ >= kMaxDepth) return std::nullopt;  // not memoized: a shallower walk may still find it
  ++depth_;
  std::optional<MaskForm> f = compute(v);
  --depth_;
  memo_[v] = f;
  return f;
}

std::optional<MaskForm> MaskForms::compute(ir::ValueId v) {
  const ir::Value& val = g_.value(v);
  if (!val.has_shape || !val.seq.is_tensor()) return std::nullopt;
  if (const Tensor* t = g_.constant(v)) return constant_form(*t);
  // A one-element integer is a size computed from shapes (the past length): its traced value.
  if (is_integer(val.dtype) && dims_static(val.dims) && dims_numel(val.dims) == 1)
    if (auto e = tr_.element(v, 0)) return MaskForm{MaskForm::Kind::kInt, Affine{Lin::of(*e), {}}, {}, {}, {}};
  const int p = idx_.producer(v);
  if (p < 0) return std::nullopt;
  const ir::Node& n = g_.nodes[p];
  if (!n.domain.empty() || n.inputs.empty() || n.outputs[0] != v) return std::nullopt;
  const std::string& op = n.op_type;
  if (op == "Range") return range(n);
  if (op == "Cast") return cast(n);
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return view(v);
  if (op == "Expand") return mapped(n.inputs[0], v);
  if (op == "Add" || op == "Sub" || op == "Mul") return arith(n);
  if (op == "LessOrEqual" || op == "Less" || op == "GreaterOrEqual" || op == "Greater") return compare(n);
  if (op == "And") return conjunction(n);
  if (op == "GatherND") return gather_nd(n);
  if (op == "Gather") return gather_flat(n);
  return std::nullopt;
}

std::optional<std::vector<int>> MaskForms::broadcast_map(ir::ValueId in, ir::ValueId out) {
  const int64_t ri = rank(g_, in), r = rank(g_, out);
  if (!g_.value(in).has_shape || !g_.value(out).has_shape || ri > r) return std::nullopt;
  std::vector<int> to(static_cast<size_t>(ri), -1);
  for (int64_t k = 0; k < ri; ++k) {
    auto d = tr_.dim(in, k);
    if (!d) return std::nullopt;
    if (d->is(1)) continue;  // broadcast: read at index 0
    auto o = tr_.dim(out, k + r - ri);
    if (!o || !(*o == *d)) return std::nullopt;
    to[static_cast<size_t>(k)] = static_cast<int>(k + r - ri);
  }
  return to;
}

// A reshape keeps the row-major order of the elements: when the dims other than static 1 are the
// same sequence on both sides, element (.., x_a, ..) of the input is the output's element with the
// same indices on those axes (an axis that is 1 at run time has index 0 on both sides).
std::optional<std::vector<int>> MaskForms::view_map(ir::ValueId in, ir::ValueId out) {
  auto non_unit = [&](ir::ValueId v, std::vector<int>* axes, std::vector<SymDim>* dims) {
    if (!g_.value(v).has_shape) return false;
    for (int64_t a = 0; a < rank(g_, v); ++a) {
      auto d = tr_.dim(v, a);
      if (!d) return false;
      if (d->is(1)) continue;
      axes->push_back(static_cast<int>(a));
      dims->push_back(*d);
    }
    return true;
  };
  std::vector<int> ia, oa;
  std::vector<SymDim> id, od;
  if (!non_unit(in, &ia, &id) || !non_unit(out, &oa, &od) || id != od) return std::nullopt;
  std::vector<int> to(static_cast<size_t>(rank(g_, in)), -1);
  for (size_t k = 0; k < ia.size(); ++k) to[static_cast<size_t>(ia[k])] = oa[k];
  return to;
}

// Up a chain of views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) to the first tensor whose
// elements v re-indexes (see view_map): a flatten and the reshape back count as one view.
std::optional<MaskForm> MaskForms::view(ir::ValueId v) {
  ir::ValueId cur = v;
  for (int step = 0; step < 8; ++step) {
    const int p = idx_.producer(cur);
    if (p < 0) return std::nullopt;
    const ir::Node& n = g_.nodes[p];
    if (!(is_op(n, "Reshape") || is_op(n, "Flatten") || is_op(n, "Squeeze") || is_op(n, "Unsqueeze") ||
          is_op(n, "Identity")) ||
        n.inputs.empty() || n.outputs[0] != cur)
      return std::nullopt;
    cur = n.inputs[0];
    if (auto to = view_map(cur, v))
      if (auto f = form(cur)) return remap(*f, *to);
  }
  return std::nullopt;
}

std::optional<MaskForm> MaskForms::mapped(ir::ValueId in, ir::ValueId out) {
  auto to = broadcast_map(in, out);
  auto f = to ? form(in) : std::nullopt;
  if (!f) return std::nullopt;
  return remap(*f, *to);
}

// Range(start, limit, 1): start + x_0.
std::optional<MaskForm> MaskForms::range(const ir::Node& n) {
  if (n.inputs.size() != 3 || !is_integer(g_.value(n.outputs[0]).dtype)) return std::nullopt;
  auto delta = tr_.element(n.inputs[2], 0);
  auto start = tr_.element(n.inputs[0], 0);
  if (!delta || !delta->is(1) || !start) return std::nullopt;
  return MaskForm{MaskForm::Kind::kInt, Affine{Lin::of(*start), {{0, Lin::of(1)}}}, {}, {}, {}};
}

// Casts that keep what the form says: integers widened to int64, bool to bool, a gathered value
// tested against zero (-> bool) or a gathered bool widened (0 / 1 stay zero / nonzero).
std::optional<MaskForm> MaskForms::cast(const ir::Node& n) {
  const DataType from = g_.value(n.inputs[0]).dtype, to = g_.value(n.outputs[0]).dtype;
  auto f = form(n.inputs[0]);
  if (!f) return std::nullopt;
  switch (f->kind) {
    case MaskForm::Kind::kInt:
      if (from == to || (to == DataType::kInt64 && is_integer(from) && from != DataType::kUInt64)) return f;
      return std::nullopt;
    case MaskForm::Kind::kBool:
      return to == DataType::kBool ? f : std::nullopt;
    case MaskForm::Kind::kGathered:
      if (to == DataType::kBool) return MaskForm{MaskForm::Kind::kBool, {}, {}, {f->read}, {}};
      if (from == DataType::kBool || from == to) return f;
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<MaskForm> MaskForms::arith(const ir::Node& n) {
  if (n.inputs.size() != 2 || !is_integer(g_.value(n.outputs[0]).dtype)) return std::nullopt;
  auto a = mapped(n.inputs[0], n.outputs[0]), b = mapped(n.inputs[1], n.outputs[0]);
  if (!a || !b || a->kind != MaskForm::Kind::kInt || b->kind != MaskForm::Kind::kInt) return std::nullopt;
  auto v = n.op_type == "Mul" ? affine_mul(a->value, b->value) : affine_add(a->value, b->value, n.op_type == "Sub" ? -1 : 1);
  if (!v) return std::nullopt;
  return MaskForm{MaskForm::Kind::kInt, *v, {}, {}, {}};
}

// a <= b as a - b <= 0; a < b as a - b + 1 <= 0 (integers); >= and > the other way round.
std::optional<MaskForm> MaskForms::compare(const ir::Node& n) {
  if (n.inputs.size() != 2) return std::nullopt;
  auto a = mapped(n.inputs[0], n.outputs[0]), b = mapped(n.inputs[1], n.outputs[0]);
  if (!a || !b || a->kind != MaskForm::Kind::kInt || b->kind != MaskForm::Kind::kInt) return std::nullopt;
  const bool less = n.op_type == "LessOrEqual" || n.op_type == "Less";
  const bool strict = n.op_type == "Less" || n.op_type == "Greater";
  auto d = less ? affine_add(a->value, b->value, -1) : affine_add(b->value, a->value, -1);
  if (d && strict) d = affine_add(*d, Affine{Lin::of(1), {}}, 1);
  if (!d) return std::nullopt;
  return MaskForm{MaskForm::Kind::kBool, {}, {*d}, {}, {}};
}

// A bool tensor's form: a conjunction, or an element gathered from a bool source.
std::optional<MaskForm> MaskForms::as_bool(ir::ValueId v, std::optional<MaskForm> f) {
  if (!f || g_.value(v).dtype != DataType::kBool) return std::nullopt;
  if (f->kind == MaskForm::Kind::kBool) return f;
  if (f->kind == MaskForm::Kind::kGathered) return MaskForm{MaskForm::Kind::kBool, {}, {}, {f->read}, {}};
  return std::nullopt;
}

std::optional<MaskForm> MaskForms::conjunction(const ir::Node& n) {
  MaskForm out{MaskForm::Kind::kBool, {}, {}, {}, {}};
  for (ir::ValueId in : n.inputs) {
    auto f = as_bool(in, mapped(in, n.outputs[0]));
    if (!f) return std::nullopt;
    out.le.insert(out.le.end(), f->le.begin(), f->le.end());
    out.keys.insert(out.keys.end(), f->keys.begin(), f->keys.end());
  }
  return out;
}

// Component k (of the last axis) of an index tensor, over its other axes: from a constant, or the
// piece of a Concat along the last axis that holds it.
std::optional<Affine> MaskForms::index_component(ir::ValueId ind, int64_t k) {
  const ir::Value& iv = g_.value(ind);
  const int64_t r = rank(g_, ind);
  if (!iv.has_shape || r < 1 || iv.dims.back() <= k) return std::nullopt;
  if (const Tensor* t = g_.constant(ind)) {
    auto v = t->numel() <= kMaxConstantElements ? t->to_int64_vector() : Result<std::vector<int64_t>>(invalid_argument(""));
    if (!v.ok()) return std::nullopt;
    const int64_t last = t->dims().back();
    std::vector<int64_t> part;
    for (size_t e = static_cast<size_t>(k); e < v->size(); e += static_cast<size_t>(last)) part.push_back((*v)[e]);
    return fit_affine(part, Dims(t->dims().begin(), t->dims().end() - 1));
  }
  const int p = idx_.producer_if(ind, "Concat");
  if (p < 0) return std::nullopt;
  auto axis = g_.nodes[p].attr_int("axis");
  if (!axis.ok() || (*axis != -1 && *axis != r - 1)) return std::nullopt;
  for (ir::ValueId piece : g_.nodes[p].inputs) {
    const ir::Value& pv = g_.value(piece);
    if (!pv.has_shape || rank(g_, piece) != r || pv.dims.back() < 0) return std::nullopt;
    if (k >= pv.dims.back()) {
      k -= pv.dims.back();
      continue;
    }
    if (pv.dims.back() != 1) return index_component(piece, k);
    auto f = form(piece);
    if (!f || f->kind != MaskForm::Kind::kInt) return std::nullopt;
    std::vector<int> to(static_cast<size_t>(r), -1);
    for (int64_t a = 0; a + 1 < r; ++a) to[static_cast<size_t>(a)] = static_cast<int>(a);
    return remap(f->value, to);
  }
  return std::nullopt;
}

// GatherND(src, indices) of a rank-2 src with index pairs: src[indices[.., 0], indices[.., 1]].
std::optional<MaskForm> MaskForms::gather_nd(const ir::Node& n) {
  auto batch_dims = n.attr_int("batch_dims", 0);
  if (!batch_dims.ok() || *batch_dims != 0 || n.inputs.size() != 2 || rank(g_, n.inputs[0]) != 2) return std::nullopt;
  const ir::Value& ind = g_.value(n.inputs[1]);
  if (!ind.has_shape || ind.dims.empty() || ind.dims.back() != 2) return std::nullopt;
  auto row = index_component(n.inputs[1], 0), col = index_component(n.inputs[1], 1);
  if (!row || !col) return std::nullopt;
  MaskForm f{MaskForm::Kind::kGathered, {}, {}, {}, {}};
  f.read = KeyRead{n.inputs[0], *row, *col};
  return f;
}

// Gather(Flatten(src, 2) or Reshape(src, [-1]), b * C + j) of a rank-2 src [R, C] with 0 <= j < C
// (j's axis is C long): src[b, j]. The TorchScript exporter's attention_mask[b, kv_idx].
std::optional<MaskForm> MaskForms::gather_flat(const ir::Node& n) {
  auto axis = n.attr_int("axis", 0);
  if (!axis.ok() || *axis != 0 || n.inputs.size() != 2) return std::nullopt;
  const int p = idx_.producer(n.inputs[0]);
  if (p < 0) return std::nullopt;
  const ir::Node& flat = g_.nodes[p];
  const ir::ValueId src = flat.inputs.empty() ? ir::kNoValue : flat.inputs[0];
  if (src == ir::kNoValue || rank(g_, src) != 2) return std::nullopt;
  auto flat_axis = flat.attr_int("axis", 1);
  const bool flattened = (is_op(flat, "Flatten") && flat_axis.ok() && *flat_axis == 2) ||
                         (is_op(flat, "Reshape") && rank(g_, n.inputs[0]) == 1);
  auto f = flattened ? form(n.inputs[1]) : std::nullopt;
  auto cols = tr_.dim(src, 1);
  if (!f || f->kind != MaskForm::Kind::kInt || !f->value.c.is(0) || f->value.x.size() != 2 || !cols || cols->is(1))
    return std::nullopt;
  int row_axis = -1, col_axis = -1;
  for (const auto& [a, coef] : f->value.x) {
    if (coef == Lin::of(*cols)) row_axis = a;
    else if (coef.is(1)) col_axis = a;
  }
  if (row_axis < 0 || col_axis < 0) return std::nullopt;
  auto col_len = tr_.dim(n.inputs[1], col_axis);
  const bool in_row = col_len && (*col_len == *cols || (col_len->is_static() && cols->is_static() && col_len->n <= cols->n));
  if (!in_row) return std::nullopt;
  MaskForm out{MaskForm::Kind::kGathered, {}, {}, {}, {}};
  out.read = KeyRead{src, index(row_axis), index(col_axis)};
  return out;
}

}  // namespace streamrt::builder
