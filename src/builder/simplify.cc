// Local simplifications after fusion (see passes.h): Cast pairs, Transpose pairs, Reshape targets
// computed from shapes, unit scalings, Slices moved ahead of the normalization they select rows of.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "builder/dim_tracer.h"
#include "builder/fusion.h"
#include "builder/passes.h"

namespace streamrt::builder {
namespace {

// Every value of `from` is exactly a value of `to` (so a Cast through `to` loses nothing).
bool lossless(DataType from, DataType to) {
  using D = DataType;
  if (from == to || from == D::kBool) return true;
  switch (from) {
    case D::kInt8:
      return to == D::kInt16 || to == D::kInt32 || to == D::kInt64 || is_floating_point(to);
    case D::kUInt8:
      return to == D::kInt16 || to == D::kInt32 || to == D::kInt64 || to == D::kUInt16 || to == D::kUInt32 ||
             to == D::kUInt64 || is_floating_point(to);
    case D::kInt16:
      return to == D::kInt32 || to == D::kInt64 || to == D::kFloat32 || to == D::kFloat64;
    case D::kUInt16:
      return to == D::kInt32 || to == D::kInt64 || to == D::kUInt32 || to == D::kUInt64 || to == D::kFloat32 ||
             to == D::kFloat64;
    case D::kInt32: return to == D::kInt64 || to == D::kFloat64;
    case D::kUInt32: return to == D::kInt64 || to == D::kUInt64 || to == D::kFloat64;
    case D::kFloat16:
    case D::kBFloat16: return to == D::kFloat32 || to == D::kFloat64;
    case D::kFloat32: return to == D::kFloat64;
    default: return false;
  }
}

bool is_op(const ir::Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

// Rewires readers of replaced values (in topological order, so chains resolve) and drops the
// replaced nodes; graph outputs are never replaced.
class Rewirer {
 public:
  explicit Rewirer(ir::Graph& g) : g_(g), outputs_(g.outputs.begin(), g.outputs.end()) {}
  bool can_replace(ir::ValueId v) const { return !outputs_.count(v); }
  void replace(ir::ValueId v, ir::ValueId by) { map_[v] = by; }
  ir::ValueId resolve(ir::ValueId v) const {
    for (auto it = map_.find(v); it != map_.end(); it = map_.find(v)) v = it->second;
    return v;
  }
  void apply(ir::Node& n) const {
    for (ir::ValueId& in : n.inputs)
      if (in != ir::kNoValue) in = resolve(in);
  }

 private:
  ir::Graph& g_;
  std::unordered_set<ir::ValueId> outputs_;
  std::unordered_map<ir::ValueId, ir::ValueId> map_;
};

}  // namespace

size_t fold_casts(ir::Graph& g) {
  Rewirer rw(g);
  std::unordered_map<ir::ValueId, size_t> cast_of;  // a Cast's output -> the node
  size_t folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    rw.apply(n);
    if (!is_op(n, "Cast") || n.inputs.empty() || n.outputs.empty()) continue;
    const ir::ValueId out = n.outputs[0];
    // Cast(Cast(x: A -> B) -> C) reads x when A -> B loses nothing: the value reaching C is x's.
    if (auto it = cast_of.find(n.inputs[0]); it != cast_of.end()) {
      const ir::ValueId x = g.nodes[it->second].inputs[0];
      if (lossless(g.value(x).dtype, g.value(n.inputs[0]).dtype)) {
        n.inputs[0] = x;
        ++folded;
      }
    }
    if (g.value(n.inputs[0]).dtype == g.value(out).dtype && rw.can_replace(out)) {  // a Cast to its own type
      rw.replace(out, n.inputs[0]);
      ++folded;
      continue;
    }
    cast_of[out] = i;
  }
  if (folded) remove_dead_code(g);
  return folded;
}

size_t fold_transposes(ir::Graph& g) {
  Rewirer rw(g);
  std::unordered_map<ir::ValueId, size_t> transpose_of;
  size_t folded = 0;
  auto perm_of = [&](const ir::Node& t) -> std::optional<std::vector<int64_t>> {
    auto p = t.attr_ints("perm", std::vector<int64_t>{});
    const size_t r = rank_of(g, t.inputs[0]);
    if (!p.ok() || !g.value(t.inputs[0]).has_shape || p->size() != r) return std::nullopt;  // no perm: reversal
    return *p;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    rw.apply(n);
    if (!is_op(n, "Transpose") || n.inputs.empty() || n.outputs.empty()) continue;
    auto p = perm_of(n);
    if (!p) continue;
    // Transpose(Transpose(x, p1), p2) = Transpose(x, p1[p2[k]]).
    if (auto it = transpose_of.find(n.inputs[0]); it != transpose_of.end()) {
      const ir::Node& inner = g.nodes[it->second];
      auto p1 = perm_of(inner);
      if (p1) {
        std::vector<int64_t> composed(p->size());
        for (size_t k = 0; k < p->size(); ++k) composed[k] = (*p1)[static_cast<size_t>((*p)[k])];
        n.inputs[0] = inner.inputs[0];
        n.attrs["perm"] = ir::Attribute::make_ints(composed);
        *p = composed;
        ++folded;
      }
    }
    bool identity = true;
    for (size_t k = 0; k < p->size(); ++k) identity = identity && (*p)[k] == static_cast<int64_t>(k);
    if (identity && rw.can_replace(n.outputs[0])) {
      rw.replace(n.outputs[0], n.inputs[0]);
      ++folded;
      continue;
    }
    transpose_of[n.outputs[0]] = i;
  }
  if (folded) remove_dead_code(g);
  return folded;
}

size_t fold_reshape_targets(ir::Graph& g) {
  GraphIndex idx(g);
  DimTracer tr(g, idx);
  std::vector<std::pair<size_t, std::vector<int64_t>>> targets;
  Rewirer rw(g);
  size_t identities = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (!is_op(n, "Reshape") || n.inputs.size() != 2 || n.outputs.empty()) continue;
    const ir::ValueId x = n.inputs[0];
    const ir::Value& shape = g.value(n.inputs[1]);
    auto allowzero = n.attr_int("allowzero", 0);
    const Tensor* given = g.constant(n.inputs[1]);
    if (!shape.has_shape || shape.dims.size() != 1 || shape.dims[0] < 0 || shape.dims[0] > 64 || !allowzero.ok() ||
        !g.value(x).has_shape)
      continue;
    const int64_t rx = static_cast<int64_t>(rank_of(g, x)), len = shape.dims[0];
    std::vector<int64_t> target;
    int inferred = 0;
    bool same = len == rx;  // every element the input's own dim: the Reshape changes nothing
    for (int64_t k = 0; k < len; ++k) {
      auto e = given ? std::optional(SymDim{ir::kNoValue, given->to_int64_vector().value()[static_cast<size_t>(k)]})
                     : tr.element(n.inputs[1], k);
      if (!e || (e->is_static() && (e->n < -1 || (e->n == 0 && *allowzero)))) break;
      auto in = k < rx ? tr.dim(x, k) : std::nullopt;
      if (e->is_static()) {
        inferred += e->n == -1;
        target.push_back(e->n);
        same = same && (e->n <= 0 || (in && in->is(e->n)));
      } else if (in && *in == *e) {
        target.push_back(0);  // the input's own dim: copied (allowzero 0)
      } else {
        ++inferred;  // the one dim left to the element count
        target.push_back(-1);
        same = false;
      }
    }
    if (static_cast<int64_t>(target.size()) != len || inferred > 1) continue;
    if (same && rw.can_replace(n.outputs[0])) {
      rw.replace(n.outputs[0], x);
      ++identities;
    } else if (!given) {
      targets.emplace_back(i, std::move(target));
    }
  }
  for (auto& [i, target] : targets) {
    ir::Node& n = g.nodes[i];
    n.inputs[1] = add_int64_constant(g, g.value(n.inputs[1]).name + "/from_dims", target);
    n.attrs.erase("allowzero");
  }
  if (identities)
    for (ir::Node& n : g.nodes) rw.apply(n);
  if (identities || !targets.empty()) remove_dead_code(g);
  return identities + targets.size();
}

size_t transposes_to_views(ir::Graph& g) {
  GraphIndex idx(g);
  DimTracer tr(g, idx);
  std::vector<std::pair<size_t, std::vector<int64_t>>> views;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (!is_op(n, "Transpose") || n.inputs.empty() || n.outputs.empty()) continue;
    auto perm = n.attr_ints("perm");
    const int64_t r = static_cast<int64_t>(rank_of(g, n.inputs[0]));
    if (!perm.ok() || static_cast<int64_t>(perm->size()) != r || r == 0) continue;
    // The axes that are not of static size 1 must keep their order; the target names each output
    // dim: static, copied (0) where it stays in place, or the one left to the element count (-1).
    std::vector<int64_t> target;
    int64_t last = -1;
    int inferred = 0;
    for (int64_t k = 0; k < r; ++k) {
      const int64_t from = (*perm)[static_cast<size_t>(k)];
      auto d = from >= 0 && from < r ? tr.dim(n.inputs[0], from) : std::nullopt;
      if (!d) break;
      if (!d->is(1)) {
        if (from < last) break;
        last = from;
      }
      if (d->is_static()) target.push_back(d->n);
      else if (from == k) target.push_back(0);
      else target.push_back(-1), ++inferred;
    }
    if (static_cast<int64_t>(target.size()) == r && inferred <= 1) views.emplace_back(i, std::move(target));
  }
  for (auto& [i, target] : views) {
    ir::Node& n = g.nodes[i];
    const ir::ValueId c = add_int64_constant(g, g.value(n.outputs[0]).name + "/view_shape", target);
    n.op_type = "Reshape";
    n.opset = std::max(n.opset, 14);
    n.inputs = {n.inputs[0], c};
    n.attrs.clear();
  }
  return views.size();
}

size_t merge_reshapes(ir::Graph& g) {
  GraphIndex idx(g);
  DimTracer tr(g, idx);
  size_t merged = 0;
  for (ir::Node& n : g.nodes) {
    if (!is_op(n, "Reshape") || n.inputs.size() != 2 || !g.is_constant(n.inputs[1])) continue;
    const int p = idx.producer_if(n.inputs[0], "Reshape");
    if (p < 0 || g.nodes[p].inputs.size() != 2) continue;
    const ir::ValueId y = n.inputs[0], x = g.nodes[p].inputs[0];
    auto target = g.constant(n.inputs[1])->to_int64_vector();
    auto allowzero = n.attr_int("allowzero", 0);
    if (!target.ok() || !allowzero.ok()) continue;
    // A copied dim (0) must be the same in y and x: the reshape from x then copies the same size.
    bool ok = true;
    for (size_t k = 0; k < target->size() && ok; ++k) {
      if ((*target)[k] != 0 || *allowzero) continue;
      auto dy = tr.dim(y, static_cast<int64_t>(k)), dx = tr.dim(x, static_cast<int64_t>(k));
      ok = dy && dx && *dy == *dx;
    }
    if (!ok) continue;
    n.inputs[0] = x;
    ++merged;
  }
  if (merged) remove_dead_code(g);
  return merged;
}

size_t drop_unit_scalings(ir::Graph& g) {
  Rewirer rw(g);
  size_t dropped = 0;
  auto is_one = [&](ir::ValueId c, ir::ValueId x) {
    const Tensor* t = g.constant(c);
    if (!t || t->numel() != 1 || t->dims().size() > rank_of(g, x) || t->dtype() != g.value(x).dtype) return false;
    auto v = t->to_float_vector();
    return v.ok() && (*v)[0] == 1.f;
  };
  for (ir::Node& n : g.nodes) {
    rw.apply(n);
    if (n.inputs.size() != 2 || n.outputs.empty() || !(is_op(n, "Mul") || is_op(n, "Div"))) continue;
    const ir::ValueId a = n.inputs[0], b = n.inputs[1];
    const ir::ValueId x = is_one(b, a) ? a : is_op(n, "Mul") && is_one(a, b) ? b : ir::kNoValue;
    if (x == ir::kNoValue || !is_float(g.value(x).dtype) || !rw.can_replace(n.outputs[0])) continue;
    rw.replace(n.outputs[0], x);
    ++dropped;
  }
  if (dropped) remove_dead_code(g);
  return dropped;
}

size_t drop_whole_slices(ir::Graph& g) {
  Rewirer rw(g);
  size_t dropped = 0;
  for (ir::Node& n : g.nodes) {
    rw.apply(n);
    if (!is_op(n, "Slice") || n.inputs.size() < 3 || n.outputs.size() != 1 || n.inputs[0] == ir::kNoValue) continue;
    const ir::Value& in = g.value(n.inputs[0]);
    const ir::Value& out = g.value(n.outputs[0]);
    if (!in.has_shape || !out.has_shape || in.dims != out.dims || in.dtype != out.dtype) continue;
    bool fixed = true;
    for (int64_t d : in.dims) fixed = fixed && d >= 0;
    // Steps of 1 (absent steps are 1): with every length kept, nothing moved either.
    if (!fixed || !constant_or_absent(g, n, 4)) continue;
    auto steps = const_ints(g, n, 4, "steps");
    bool unit = true;
    if (steps)
      for (int64_t st : *steps) unit = unit && st == 1;
    if (!unit || !rw.can_replace(n.outputs[0])) continue;
    rw.replace(n.outputs[0], n.inputs[0]);
    ++dropped;
  }
  if (dropped) remove_dead_code(g);
  return dropped;
}

Result<size_t> slices_before_norms(ir::Graph& g) {
  GraphIndex idx(g);
  size_t moved = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& slice = g.nodes[i];
    if (!is_op(slice, "Slice") || slice.inputs.size() < 3 || slice.outputs.size() != 1 ||
        slice.inputs[0] == ir::kNoValue)
      continue;
    const int ni = idx.producer_if(slice.inputs[0], "RMSNormalization");
    if (ni < 0 || idx.single_consumer(slice.inputs[0]) != static_cast<int>(i)) continue;
    ir::Node& norm = g.nodes[static_cast<size_t>(ni)];
    const int64_t rank = static_cast<int64_t>(rank_of(g, slice.inputs[0]));
    auto axis = norm.attr_int("axis", -1);
    if (norm.inputs.empty() || norm.outputs.size() != 1 || rank == 0 || !axis.ok() || *axis < -rank || *axis >= rank)
      continue;
    const int64_t first_normalized = *axis < 0 ? *axis + rank : *axis;
    // The sliced axes (all of starts' when axes is absent) must lie before the normalized ones.
    if (!constant_or_absent(g, slice, 3)) continue;
    std::optional<std::vector<int64_t>> axes = const_ints(g, slice, 3, "axes");
    if (!axes) {
      auto starts = const_ints(g, slice, 1, "starts");
      if (!starts) continue;
      axes.emplace(starts->size());
      for (size_t k = 0; k < axes->size(); ++k) (*axes)[k] = static_cast<int64_t>(k);
    }
    bool rows_only = true;
    for (int64_t a : *axes) rows_only = rows_only && a >= -rank && a < rank && (a < 0 ? a + rank : a) < first_normalized;
    if (!rows_only) continue;
    // Slice(Norm(x)) -> Norm(Slice(x)): the norm's output value becomes the sliced rows.
    const ir::ValueId x = norm.inputs[0], middle = norm.outputs[0], out = slice.outputs[0];
    slice.inputs[0] = x;
    slice.outputs[0] = middle;
    norm.inputs[0] = middle;
    norm.outputs[0] = out;
    g.value(middle).has_shape = false;  // the caller infers shapes again
    ++moved;
  }
  if (moved) SRT_RETURN_IF_ERROR(g.topo_sort());
  return moved;
}

}  // namespace streamrt::builder
