// Exporter idioms around attention (see attention_idioms.h).
#include "builder/attention_idioms.h"

// Producers are matched with GraphIndex::producer_if only: fuse_attention then checks that nothing
// else reads the absorbed values but shape arithmetic that dies with them.

namespace streamrt::builder {
namespace {

bool is_zero_scalar(const ir::Graph& g, ir::ValueId v) {
  const Tensor* t = g.constant(v);
  if (!t || t->numel() != 1 || !is_float(t->dtype())) return false;
  auto f = t->to_float_vector();
  return f.ok() && (*f)[0] == 0.f;
}

// Number of elements of a 1-D shape tensor, or -1.
int64_t length(const ir::Graph& g, ir::ValueId v) {
  const ir::Value& val = g.value(v);
  return val.has_shape && val.dims.size() == 1 ? val.dims[0] : -1;
}

bool same(const std::optional<SymDim>& a, const std::optional<SymDim>& b) { return a && b && *a == *b; }

bool is_static(const std::optional<SymDim>& a, int64_t n) { return a && a->is(n); }

}  // namespace

int nan_guarded_softmax(const ir::Graph& g, const GraphIndex& idx, ir::ValueId v, std::vector<int>* chain) {
  const int w = idx.producer_if(v, "Where");
  if (w < 0 || g.nodes[w].inputs.size() != 3) return -1;
  const auto& in = g.nodes[w].inputs;
  const int isnan = idx.producer_if(in[0], "IsNaN");
  if (isnan < 0 || !is_zero_scalar(g, in[1]) || g.nodes[isnan].inputs[0] != in[2]) return -1;
  const int sm = idx.producer_if(in[2], "Softmax");
  if (sm < 0) return -1;
  chain->push_back(isnan);
  chain->push_back(w);
  return sm;
}

std::optional<ir::ValueId> flattened_transpose(const ir::Graph& g, const GraphIndex& idx, DimTracer& tr, ir::ValueId v,
                                               std::vector<int>* chain) {
  const int r2 = idx.producer_if(v, "Reshape");
  if (r2 < 0 || g.nodes[r2].inputs.size() != 2) return std::nullopt;
  const int t = idx.producer_if(g.nodes[r2].inputs[0], "Transpose");
  if (t < 0) return std::nullopt;
  auto perm = g.nodes[t].attr_ints("perm", std::vector<int64_t>{});
  if (!perm.ok() || *perm != std::vector<int64_t>{0, 2, 1}) return std::nullopt;
  const int r1 = idx.producer_if(g.nodes[t].inputs[0], "Reshape");
  if (r1 < 0 || g.nodes[r1].inputs.size() != 2) return std::nullopt;
  const ir::ValueId x = g.nodes[r1].inputs[0], flat = g.nodes[r1].inputs[1], back = g.nodes[r2].inputs[1];
  const int r = static_cast<int>(rank_of(g, x));
  if (r < 3 || length(g, flat) != 3 || length(g, back) != r) return std::nullopt;
  // [-1, S, D]: every leading axis merged into the first.
  if (!is_static(tr.element(flat, 0), -1) || !same(tr.element(flat, 1), tr.dim(x, -2)) ||
      !same(tr.element(flat, 2), tr.dim(x, -1)))
    return std::nullopt;
  // [lead..., D, S]: the leading axes restored, the last two swapped. One entry may be -1 (a
  // shape rewritten to infer a dim, as simplify does): the others matching, the element count
  // makes it the missing one.
  bool inferred = false;
  for (int i = 0; i < r; ++i) {
    const int src = i < r - 2 ? i : (i == r - 2 ? r - 1 : r - 2);
    auto e = tr.element(back, i);
    if (is_static(e, -1) && !inferred) inferred = true;
    else if (!same(e, tr.dim(x, src))) return std::nullopt;
  }
  chain->insert(chain->end(), {r2, t, r1});
  return x;
}

std::optional<RepeatedKv> repeated_kv(const ir::Graph& g, const GraphIndex& idx, DimTracer& tr, ir::ValueId v) {
  const int re = idx.producer_if(v, "Reshape");
  if (re < 0 || g.nodes[re].inputs.size() != 2) return std::nullopt;
  const int ex = idx.producer_if(g.nodes[re].inputs[0], "Expand");
  if (ex < 0 || g.nodes[ex].inputs.size() != 2) return std::nullopt;
  const int un = idx.producer_if(g.nodes[ex].inputs[0], "Unsqueeze");
  if (un < 0) return std::nullopt;
  const ir::Node& u = g.nodes[un];
  const ir::ValueId c = u.inputs[0];
  auto axes = squeeze_axes(g, u);
  if (!axes || (*axes != std::vector<int64_t>{2} && *axes != std::vector<int64_t>{-3}) || rank_of(g, c) != 4)
    return std::nullopt;
  auto stored_heads = tr.dim(c, 1);  // static once traced, even where shape inference left -1
  const int64_t heads = stored_heads && stored_heads->is_static() ? stored_heads->n : -1;
  const ir::ValueId shape5 = g.nodes[ex].inputs[1], shape4 = g.nodes[re].inputs[1];
  if (heads < 1 || length(g, shape5) != 5 || length(g, shape4) != 4) return std::nullopt;
  // Expand to [B, Hkv, G, S, D]: every axis but the new one kept (its size, or 1).
  auto group = tr.element(shape5, 2);
  if (!group || !group->is_static() || group->n < 1) return std::nullopt;
  const int from[5] = {0, 1, -1, 2, 3};
  for (int i = 0; i < 5; ++i) {
    if (from[i] < 0) continue;
    auto e = tr.element(shape5, i);
    if (!is_static(e, 1) && !same(e, tr.dim(c, from[i]))) return std::nullopt;
  }
  // Reshape to [B, Hkv * G, S, D]; 0 (copy) only where it copies B, one -1 at most.
  auto allowzero_attr = g.nodes[re].attr_int("allowzero", 0);
  const bool allowzero = !allowzero_attr.ok() || *allowzero_attr != 0;
  int inferred = 0;
  for (int i = 0; i < 4; ++i) {
    auto e = tr.element(shape4, i);
    if (!e) return std::nullopt;
    if (i == 1) {
      if (!e->is(heads * group->n)) return std::nullopt;
    } else if (is_static(e, -1)) {
      ++inferred;
    } else if (!(i == 0 && is_static(e, 0) && !allowzero) && !same(e, tr.dim(c, i))) {
      return std::nullopt;
    }
  }
  if (inferred > 1) return std::nullopt;
  return RepeatedKv{c, group->n, {un, ex, re}};
}

}  // namespace streamrt::builder
