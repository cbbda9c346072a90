// Fusion: scaled-dot-product attention.
//
//   MatMul(Q', K') -> [Mul/Div by scalar constants] -> [Add(mask) | Where(cond, fill, .)]
//     -> Softmax(last axis) -> MatMul(., V)          becomes          Attention(Q, K, V[, mask])
//
// Q' and K' may carry their own scalar Mul/Div (torch's exporter scales Q and K^T by sqrt(scale)
// each); every scalar folds into `scale`. K' = Transpose(K) swapping the last two axes is absorbed
// (k_transposed = 0); any other K' is passed as K^T (k_transposed = 1), so the pass adds no node.
// Masks: an additive mask stays an input; Where(cond, fill, .) with a scalar fill becomes a bool
// mask (true = attend) with mask_fill = fill, exactly what Where computes; a constant mask equal to
// the bottom-right causal triangle (fill or additive values <= kLargeNegative) becomes causal = 1 and
// disappears. So does a Slice [0, t) x [0, t) of a constant square causal triangle (Llama's
// ~causal[:t, :t] with a dynamic t) once DimTracer proves Sq == Skv == the slice size at every
// length. Every absorbed intermediate must have no other consumer.
#include <cmath>
#include <map>

#include "builder/attention_idioms.h"
#include "builder/fusion.h"
#include "builder/passes.h"
#include "ops/attention.h"
#include "ops/softmax.h"

namespace streamrt::builder {
namespace {

// Masked scores at or below this count as -inf: exp(-1e4 + anything a score reaches) is 0 in float,
// so a masked key gets exactly the weight 0 either way once its row keeps one unmasked key.
constexpr float kLargeNegative = -1e4f;

// The value of a float constant with one element whose rank does not exceed `rank` (so it
// broadcasts without changing the other operand's shape).
std::optional<float> scalar(const ir::Graph& g, ir::ValueId v, size_t rank) {
  const Tensor* t = g.constant(v);
  if (!t || t->numel() != 1 || !is_float(t->dtype()) || t->dims().size() > rank) return std::nullopt;
  return t->to_float_vector().value()[0];
}

// Node producing v if it is a live `op` node and v's only consumer is the node we came from.
int absorbable(const GraphIndex& idx, ir::ValueId v, const char* op) {
  int p = idx.producer_if(v, op);
  return p >= 0 && idx.single_consumer(v) >= 0 ? p : -1;
}

// Walks up Mul/Div by scalar constants from v, folding them into `scale`.
ir::ValueId strip_scale(const ir::Graph& g, const GraphIndex& idx, ir::ValueId v, float* scale,
                        std::vector<int>* chain) {
  for (;;) {
    const size_t rank = rank_of(g, v);
    if (int m = absorbable(idx, v, "Mul"); m >= 0) {
      const auto& in = g.nodes[m].inputs;
      if (auto c = scalar(g, in[1], rank)) { *scale *= *c, v = in[0]; }
      else if (auto c0 = scalar(g, in[0], rank)) { *scale *= *c0, v = in[1]; }
      else return v;
      chain->push_back(m);
    } else if (int d = absorbable(idx, v, "Div"); d >= 0) {
      const auto& in = g.nodes[d].inputs;
      auto c = scalar(g, in[1], rank);
      if (!c || *c == 0.f) return v;
      *scale /= *c, v = in[0];
      chain->push_back(d);
    } else {
      return v;
    }
  }
}

bool swaps_last_two(const ir::Node& t, size_t rank) {
  auto perm = t.attr_ints("perm", std::vector<int64_t>{});
  if (!perm.ok() || perm->size() != rank || rank < 2) return false;
  for (size_t i = 0; i + 2 < rank; ++i)
    if ((*perm)[i] != static_cast<int64_t>(i)) return false;
  return (*perm)[rank - 2] == static_cast<int64_t>(rank - 1) && (*perm)[rank - 1] == static_cast<int64_t>(rank - 2);
}

// Which entries of a constant mask are masked, as bytes; nullopt if `t` is not a mask of that form.
// Additive: 0 = keep, <= kLargeNegative = masked. Bool: `masked_when` marks the masked entries.
std::optional<std::vector<uint8_t>> masked_entries(const Tensor& t, bool additive, bool masked_when) {
  auto f = t.to_float_vector();
  if (!f.ok()) return std::nullopt;
  std::vector<uint8_t> m(f->size());
  for (size_t e = 0; e < f->size(); ++e) {
    const float x = (*f)[e];
    if (additive && x != 0.f && !(x <= kLargeNegative)) return std::nullopt;
    m[e] = additive ? x != 0.f : (x != 0.f) == masked_when;
  }
  return m;
}

// True when the masked entries of a [..., Sq, Skv] mask are exactly j > i + Skv - Sq.
bool is_causal(const std::vector<uint8_t>& masked, const Dims& dims, int64_t sq, int64_t skv) {
  if (dims.size() < 2 || dims[dims.size() - 2] != sq || dims.back() != skv) return false;
  for (size_t e = 0; e < masked.size(); ++e) {
    const int64_t i = static_cast<int64_t>(e) / skv % sq, j = static_cast<int64_t>(e) % skv;
    if (static_cast<bool>(masked[e]) != (j > i + skv - sq)) return false;
  }
  return true;
}

struct Match {
  std::vector<int> chain;  // nodes absorbed besides the root
  ir::ValueId q = ir::kNoValue, k = ir::kNoValue, v = ir::kNoValue, mask = ir::kNoValue;
  float scale = 1.f;
  bool k_transposed = true, causal = false;
  bool nan_to_zero = false;  // the softmax was NaN-guarded
  int64_t kv_group = 1;
  bool left_dead = false;  // absorbed nodes leave shape computations or a shared sliced mask dead
  bool invert_mask = false;  // the mask input must be the negation of the constant `mask`
  std::optional<float> mask_fill;  // of a bool mask from Where
};

// Slice(s) [0, E) with step 1 on the last two axes of a constant square bool causal triangle
// (`masked_when` marks masked entries: strictly above the diagonal), whose sizes are provably the
// scores' Sq == Skv: then the mask is the causal mask of the scores at every sequence length.
bool is_sliced_causal(const ir::Graph& g, const GraphIndex& idx, ir::ValueId cond, bool masked_when,
                      const Match& m, size_t scores_rank) {
  const ir::Value& cv = g.value(cond);
  const int64_t r = static_cast<int64_t>(cv.dims.size());
  if (!cv.has_shape || r < 2 || r > static_cast<int64_t>(scores_rank)) return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (cv.dims[i] != 1) return false;
  ir::ValueId c = cond;
  for (int s; (s = idx.producer_if(c, "Slice")) >= 0; c = g.nodes[s].inputs[0]) {
    const ir::Node& n = g.nodes[s];
    auto starts = const_ints(g, n, 1, "starts");
    auto steps = const_ints(g, n, 4, "steps");  // sizes (axes) are the DimTracer's part below
    if (!starts || !constant_or_absent(g, n, 4) || (steps && steps->size() != starts->size())) return false;
    for (size_t i = 0; i < starts->size(); ++i)
      if ((*starts)[i] != 0 || (steps && (*steps)[i] != 1)) return false;
  }
  const Tensor* t = g.constant(c);
  if (c == cond || !t || t->dtype() != DataType::kBool || t->dims().size() != static_cast<size_t>(r)) return false;
  const int64_t n = t->dims()[r - 1];
  auto masked = masked_entries(*t, false, masked_when);
  if (n < 2 || !masked || !is_causal(*masked, t->dims(), n, n)) return false;
  DimTracer tr(g, idx);
  auto sq = tr.dim(m.q, -2), skv = tr.dim(m.k, m.k_transposed ? -1 : -2);
  auto mi = tr.dim(cond, -2), mj = tr.dim(cond, -1);
  if (!sq || !skv || !mi || !mj || !(*sq == *skv) || sq->cap != 0 || !(*mi == *mj)) return false;
  // The mask is min(E, n) x min(E, n) with E == S; wherever Where succeeds that is S x S (n >= 2:
  // a 1 x 1 triangle would broadcast as "attend to every key").
  return sq->is_static() ? *mi == *sq : mi->root == sq->root && mi->n == sq->n && sq->root2 == ir::kNoValue;
}

// Scores side: [scalars] -> MatMul(Q', K'). Fills q, k, scale, k_transposed.
bool match_scores(const ir::Graph& g, const GraphIndex& idx, ir::ValueId s, Match* m) {
  s = strip_scale(g, idx, s, &m->scale, &m->chain);
  int mm = absorbable(idx, s, "MatMul");
  if (mm < 0 || g.nodes[mm].inputs.size() != 2) return false;
  m->chain.push_back(mm);
  m->q = strip_scale(g, idx, g.nodes[mm].inputs[0], &m->scale, &m->chain);
  ir::ValueId kt = strip_scale(g, idx, g.nodes[mm].inputs[1], &m->scale, &m->chain);
  int tr = absorbable(idx, kt, "Transpose");
  DimTracer tracer(g, idx);
  if (tr >= 0 && swaps_last_two(g.nodes[tr], rank_of(g, kt))) {
    m->chain.push_back(tr);
    m->k = strip_scale(g, idx, g.nodes[tr].inputs[0], &m->scale, &m->chain);
    m->k_transposed = false;
  } else if (auto x = flattened_transpose(g, idx, tracer, kt, &m->chain)) {
    m->k = strip_scale(g, idx, *x, &m->scale, &m->chain);
    m->k_transposed = false;
    m->left_dead = true;  // the shape arithmetic of the reshapes
  } else {
    m->k = kt;
  }
  return true;
}

// Where(cond, fill, scores) / Where(cond, scores, fill) with a scalar fill.
bool match_where(const ir::Graph& g, const GraphIndex& idx, int w, const Dims& sd, Match* m) {
  const auto& in = g.nodes[w].inputs;
  if (in.size() != 3) return false;
  const size_t rank = sd.size();
  bool masked_when_true;
  std::optional<float> fill;
  ir::ValueId scores;
  if ((fill = scalar(g, in[1], rank))) masked_when_true = true, scores = in[2];
  else if ((fill = scalar(g, in[2], rank))) masked_when_true = false, scores = in[1];
  else return false;
  if (!match_scores(g, idx, scores, m)) return false;
  ir::ValueId cond = in[0];
  m->mask_fill = *fill;
  if (const Tensor* c = g.constant(cond)) {
    auto masked = masked_entries(*c, false, masked_when_true);
    if (!masked) return false;
    // A large negative fill acts as -inf where the row keeps a key, as every causal row does when
    // Sq <= Skv (it keeps key 0).
    const int64_t sq = sd[rank - 2], skv = sd[rank - 1];
    if (*fill <= kLargeNegative && sq > 0 && sq <= skv && is_causal(*masked, c->dims(), sq, skv)) {
      m->causal = true;
      m->mask_fill.reset();
      return true;
    }
    m->mask = cond;
    m->invert_mask = masked_when_true;
    return true;
  }
  bool keep = !masked_when_true;  // cond is true where a key is attended
  if (masked_when_true) {
    // Exporters write masked_fill(~keep): use `keep` (through a bool -> bool Cast, if any).
    int cast = absorbable(idx, cond, "Cast");
    if (cast >= 0 && g.value(g.nodes[cast].inputs[0]).dtype == DataType::kBool) {
      m->chain.push_back(cast);
      cond = g.nodes[cast].inputs[0];
    }
    if (int n = idx.producer_if(cond, "Not"); n >= 0) {
      if (idx.single_consumer(cond) >= 0) m->chain.push_back(n);
      cond = g.nodes[n].inputs[0];
      keep = true;
    }
  }
  // Llama with a dynamic length: ~causal[:t, :t] of a constant triangle (Sq == Skv == t).
  if (*fill <= kLargeNegative && is_sliced_causal(g, idx, cond, !keep, *m, rank)) {
    m->causal = m->left_dead = true;
    m->mask_fill.reset();
    return true;
  }
  if (!keep) return false;  // a run-time "masked" condition: no bool mask input says that
  m->mask = cond;
  return true;
}

// The chain ending at the root MatMul, if it is one.
std::optional<Match> match(const ir::Graph& g, const GraphIndex& idx, int root) {
  const ir::Node& r = g.nodes[root];
  if (r.inputs.size() != 2) return std::nullopt;
  Match m;
  int sm = absorbable(idx, r.inputs[0], "Softmax");
  if (sm < 0 && (sm = nan_guarded_softmax(g, idx, r.inputs[0], &m.chain)) >= 0) m.nan_to_zero = true;
  if (sm < 0) return std::nullopt;
  const ir::ValueId x = g.nodes[sm].inputs[0];
  const ir::Value& xv = g.value(x);
  if (!xv.has_shape || xv.dims.size() < 2) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(xv.dims.size());
  auto axis = ops::softmax_axis(g.nodes[sm], rank);
  if (!axis.ok() || *axis != rank - 1) return std::nullopt;
  m.chain.push_back(sm);
  m.v = r.inputs[1];
  if (int add = absorbable(idx, x, "Add"); add >= 0) {
    m.chain.push_back(add);
    for (int side = 0; side < 2; ++side) {
      Match t = m;
      if (!match_scores(g, idx, g.nodes[add].inputs[side], &t)) continue;
      t.mask = g.nodes[add].inputs[1 - side];
      const Tensor* c = g.constant(t.mask);
      const int64_t sq = xv.dims[rank - 2], skv = xv.dims[rank - 1];
      if (c && sq > 0 && sq <= skv) {
        auto masked = masked_entries(*c, true, true);
        if (masked && is_causal(*masked, c->dims(), sq, skv)) t.mask = ir::kNoValue, t.causal = true;
      }
      return t;
    }
    return std::nullopt;
  }
  if (int w = absorbable(idx, x, "Where"); w >= 0) {
    m.chain.push_back(w);
    return match_where(g, idx, w, xv.dims, &m) ? std::optional<Match>(m) : std::nullopt;
  }
  return match_scores(g, idx, x, &m) ? std::optional<Match>(m) : std::nullopt;
}

// Grouped-query K and V repeated to every query head (repeat_kv) are read by group instead.
bool fold_repeated_kv(const ir::Graph& g, const GraphIndex& idx, Match* m) {
  if (m->k_transposed) return false;
  DimTracer tr(g, idx);
  auto k = repeated_kv(g, idx, tr, m->k), v = repeated_kv(g, idx, tr, m->v);
  if (!k || !v || k->group != v->group) return false;
  m->k = k->kv, m->v = v->kv, m->kv_group = k->group;
  m->chain.insert(m->chain.end(), k->nodes.begin(), k->nodes.end());
  m->chain.insert(m->chain.end(), v->nodes.begin(), v->nodes.end());
  m->left_dead = true;  // the Expand's shape arithmetic
  return true;
}

// Q, K, V of one float type and ranks >= 2, and the fused op computes the root's output shape
// (or dims of it that shape inference leaves unknown).
bool fits(const ir::Graph& g, const Match& m, const ir::Node& root) {
  const ir::Value &q = g.value(m.q), &k = g.value(m.k), &v = g.value(m.v);
  if (!q.has_shape || !k.has_shape || !v.has_shape || !is_float(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    return false;
  const ir::Value* mask = m.mask != ir::kNoValue ? &g.value(m.mask) : nullptr;
  if (mask && (!mask->has_shape || (mask->dtype != q.dtype && mask->dtype != DataType::kBool))) return false;
  auto out = ops::attention_output_dims(root, q.dims, k.dims, v.dims, mask ? &mask->dims : nullptr, nullptr,
                                       m.k_transposed, 0, m.kv_group);
  const ir::Value& y = g.value(root.outputs[0]);
  if (!out.ok() || !y.has_shape || out->size() != y.dims.size() || y.dtype != q.dtype) return false;
  // A dim shape inference could not tell on one side (a Reshape's -1 at a dynamic batch on Q,
  // a mask built from the inputs on the root) may be known on the other: the matched chain
  // computes the same output at run time, where the op checks the mask broadcasts to the scores.
  for (size_t i = 0; i < out->size(); ++i)
    if ((*out)[i] >= 0 && y.dims[i] >= 0 && (*out)[i] != y.dims[i]) return false;
  return true;
}

// Exporters move heads in front of the sequence with Transpose [0, 2, 1, 3] before attention
// (K^T: [0, 2, 3, 1]) and back after it; the kernels read and write the [B, S, H, D] layout in
// place instead (the op's bshd bits). A Transpose that other nodes read stays for them.
void absorb_layout_transposes(ir::Graph& g) {
  GraphIndex idx(g);
  auto is_perm = [&](int t, const std::vector<int64_t>& want) {
    auto p = g.nodes[t].attr_ints("perm");
    return p.ok() && *p == want && g.value(g.nodes[t].inputs[0]).dims.size() == 4;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (idx.removed(i) || g.nodes[i].op_type != "Attention" || !g.nodes[i].domain.empty()) continue;
    ir::Node& n = g.nodes[i];
    auto bits_attr = n.attr_int("bshd", 0);
    auto kt_attr = n.attr_int("k_transposed", 0);
    if (!bits_attr.ok() || !kt_attr.ok()) continue;
    int64_t bits = *bits_attr;
    bool k_transposed = *kt_attr == 1;
    auto take = [&](size_t input, const std::vector<int64_t>& perm) {
      const int t = idx.producer_if(n.inputs[input], "Transpose");
      if (t < 0 || !is_perm(t, perm)) return false;
      if (idx.single_consumer(n.inputs[input]) == static_cast<int>(i)) idx.remove(t);
      n.inputs[input] = g.nodes[t].inputs[0];
      return true;
    };
    if (take(0, {0, 2, 1, 3})) bits |= ops::kBshdQ;
    if (k_transposed ? take(1, {0, 2, 3, 1}) : take(1, {0, 2, 1, 3})) {
      bits |= ops::kBshdK;
      k_transposed = false;
    }
    if (take(2, {0, 2, 1, 3})) bits |= ops::kBshdV;
    const int c = idx.single_consumer(n.outputs[0]);
    if (c >= 0 && g.nodes[c].op_type == "Transpose" && is_perm(c, {0, 2, 1, 3})) {
      n.outputs = g.nodes[c].outputs;
      idx.remove(c);
      bits |= ops::kBshdY;
    }
    n.attrs["k_transposed"] = ir::Attribute::make_int(k_transposed ? 1 : 0);
    if (bits) n.attrs["bshd"] = ir::Attribute::make_int(bits);
  }
  idx.compact();
}

}  // namespace

size_t fuse_attention(ir::Graph& g) {
  size_t fused = 0;
  bool left_dead = false;
  std::vector<std::pair<ir::ValueId, ir::ValueId>> to_invert;  // (fused output, constant mask)
  {
    GraphIndex idx(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      ir::Node& root = g.nodes[i];
      if (idx.removed(i) || root.op_type != "MatMul" || !root.domain.empty() || root.outputs.empty()) continue;
      auto m = match(g, idx, static_cast<int>(i));
      if (!m) continue;
      auto usable = [&](const Match& c) {
        const int r = static_cast<int>(i);
        return fits(g, c, root) && (c.left_dead ? idx.only_use_with_dead(c.chain, r) : idx.single_use_chain(c.chain, r));
      };
      if (Match grouped = *m; fold_repeated_kv(g, idx, &grouped) && usable(grouped)) m = std::move(grouped);
      else if (!usable(*m)) continue;
      ir::Node n;
      n.name = root.name + "/attention";
      n.op_type = "Attention";
      n.opset = root.opset;
      n.inputs = {m->q, m->k, m->v};
      if (m->mask != ir::kNoValue) n.inputs.push_back(m->mask);
      n.outputs = root.outputs;
      n.attrs["scale"] = ir::Attribute::make_float(m->scale);
      if (m->causal) n.attrs["causal"] = ir::Attribute::make_int(1);
      n.attrs["k_transposed"] = ir::Attribute::make_int(m->k_transposed ? 1 : 0);
      if (m->mask_fill) n.attrs["mask_fill"] = ir::Attribute::make_float(*m->mask_fill);
      if (m->nan_to_zero) n.attrs["nan_to_zero"] = ir::Attribute::make_int(1);
      if (m->kv_group > 1) n.attrs["kv_group"] = ir::Attribute::make_int(m->kv_group);
      left_dead |= m->left_dead;
      if (m->invert_mask) to_invert.emplace_back(n.outputs[0], m->mask);
      for (int c : m->chain) idx.remove(c);
      root = std::move(n);
      ++fused;
    }
    idx.compact();
  }
  // New constants only now: the index above was sized for the values that existed.
  std::map<ir::ValueId, ir::ValueId> inverted;  // one negation per constant, however many layers read it
  for (auto [out, cond] : to_invert) {
    auto [it, is_new] = inverted.emplace(cond, ir::kNoValue);
    if (is_new) {
      const Tensor& c = *g.constant(cond);
      Tensor keep = Tensor::allocate(DataType::kBool, c.dims()).value();
      for (int64_t e = 0; e < c.numel(); ++e) keep.mutable_data_as<uint8_t>()[e] = !c.data_as<uint8_t>()[e];
      it->second = g.add_value(g.value(cond).name + "/keep", DataType::kBool, c.dims(), true);
      g.set_constant(it->second, std::move(keep));
    }
    for (auto& n : g.nodes)
      if (!n.outputs.empty() && n.outputs[0] == out) n.inputs[3] = it->second;
  }
  // The sliced mask (shared by every layer, so no chain absorbed it) and its end computation, and
  // the masks built from attention_mask once they are the op's own.
  if (fused && fold_attention_masks(g) > 0) left_dead = true;
  if (left_dead) remove_dead_code(g);
  if (fused) absorb_layout_transposes(g);
  return fused;
}

}  // namespace streamrt::builder
