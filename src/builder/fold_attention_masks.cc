// Attention masks built from attention_mask become the op's own masking (see fusion.h).
//
// An Attention fused from a transformers export reads a [B, 1, Sq, Skv] mask that the graph builds
// once per forward from index tensors and attention_mask: causal (kv_idx <= q_idx), a sliding
// window (kv_idx > q_idx - w) and padding (attention_mask[b, kv_idx]), combined with And and turned
// additive by Where(keep, 0, fill), or passed as a bool mask with mask_fill. MaskForms reads the
// keep condition symbolically; when every atom of it is one of
//   x_j - x_i - (Skv - Sq) <= 0                    -> causal = 1
//   x_i - x_j + (Skv - Sq) - (w - 1) <= 0          -> window = w
//   src[x_b, x_j] != 0 (src rank 2, bool or int)   -> key_mask = src
//   always true (say x_i >= 0)                     -> nothing
// over the scores' batch b, query i and key j (the mask's axes proven to be the scores' or 1),
// the mask input is dropped for those. The fill carries over as mask_fill: -inf, or a finite fill
// low enough to swamp any score (an additive one <= kMaskSwampsScore, which the op already reads so,
// a bool one <= kLargeNegative): a row that keeps a key gives masked keys exactly the weight 0
// either way, and a row that keeps none is NaN / uniform in both (attention.h). An additive mask of
// constant zeros (an all-keep mask a static build folded) is dropped.
#include <algorithm>
#include <cmath>
#include <memory>

#include "builder/fusion.h"
#include "builder/mask_forms.h"
#include "ops/attention.h"

namespace streamrt::builder {
namespace {

// Bool-mask fills at or below this give masked keys weight 0 next to any score a row keeps
// (exp(-1e4 - score) is 0 in float), as in fuse_attention.
constexpr float kLargeNegative = -1e4f;

// The float value of a one-element constant.
std::optional<float> scalar(const ir::Graph& g, ir::ValueId v) {
  const Tensor* t = g.constant(v);
  if (!t || t->numel() != 1 || !is_float(t->dtype())) return std::nullopt;
  return t->to_float_vector().value()[0];
}

// The keep condition of an Attention's mask input and the fill of the keys it drops.
struct Keep {
  ir::ValueId cond = ir::kNoValue;
  float fill = 0.f;
};

std::optional<Keep> keep_condition(const ir::Graph& g, const GraphIndex& idx, const ir::Node& n) {
  const ir::ValueId mask = n.inputs[3];
  const ir::Value& mv = g.value(mask);
  if (mv.dtype == DataType::kBool) {
    auto fill = n.attr_float("mask_fill", -std::numeric_limits<float>::infinity());
    if (!fill.ok() || !(*fill <= kLargeNegative)) return std::nullopt;
    return Keep{mask, *fill};
  }
  // Additive: Where(keep, 0, fill).
  const int w = idx.producer_if(mask, "Where");
  if (w < 0 || g.nodes[w].inputs.size() != 3) return std::nullopt;
  const auto& in = g.nodes[w].inputs;
  auto zero = scalar(g, in[1]), fill = scalar(g, in[2]);
  const size_t r = rank_of(g, in[0]);
  if (!zero || *zero != 0.f || !fill || !(*fill <= ops::kMaskSwampsScore) || rank_of(g, in[1]) > r ||
      rank_of(g, in[2]) > r || g.value(in[0]).dtype != DataType::kBool)
    return std::nullopt;
  return Keep{in[0], *fill};
}

// What the keep condition becomes on the op.
struct Folded {
  bool causal = false;
  int64_t window = 0;
  ir::ValueId key_mask = ir::kNoValue;
};

// The scores' dims as traced (the output's leading dims, then Sq and Skv) and Skv - Sq.
struct Scores {
  int r = 0;
  std::vector<std::optional<SymDim>> dims;
  Lin offset;
};

// The tensor a key read can pass to the op: src itself, or what a Cast to bool of an integer or
// bool tensor reads (nonzero alike).
ir::ValueId key_source(const ir::Graph& g, const GraphIndex& idx, ir::ValueId src) {
  if (const int c = idx.producer_if(src, "Cast"); c >= 0 && g.value(src).dtype == DataType::kBool) {
    const DataType from = g.value(g.nodes[c].inputs[0]).dtype;
    if (from == DataType::kBool || is_integer(from)) src = g.nodes[c].inputs[0];
  }
  const DataType t = g.value(src).dtype;
  return t == DataType::kBool || is_integer(t) ? src : ir::kNoValue;
}

// True when d <= 0 holds for any indices: no positive coefficient, a constant <= 0.
bool always(const Affine& d) {
  if (!d.c.is_static() || d.c.c > 0) return false;
  for (const auto& [axis, coef] : d.x)
    if (!coef.is_static() || coef.c > 0) return false;
  return true;
}

// Classifies the atoms of `keep`, already over the scores' axes.
std::optional<Folded> classify(const ir::Graph& g, const GraphIndex& idx, const MaskForm& keep, const Scores& s,
                               ir::ValueId* read_src) {
  const int i = s.r - 2, j = s.r - 1;
  // Both sides as they read on these scores: an axis of static size 1 is index 0.
  std::vector<int> unit(static_cast<size_t>(s.r));
  for (int a = 0; a < s.r; ++a) {
    const auto& d = s.dims[static_cast<size_t>(a)];
    unit[static_cast<size_t>(a)] = d && d->is(1) ? -1 : a;
  }
  const Affine causal_terms = remap(Affine{Lin{}, {{j, Lin::of(1)}, {i, Lin::of(-1)}}}, unit);
  const Affine window_terms = remap(Affine{Lin{}, {{i, Lin::of(1)}, {j, Lin::of(-1)}}}, unit);
  const Affine batch_index = remap(Affine{Lin{}, {{0, Lin::of(1)}}}, unit);
  const Affine key_index = remap(Affine{Lin{}, {{j, Lin::of(1)}}}, unit);
  auto neg_offset = lin_add(Lin{}, s.offset, -1);
  Folded f;
  for (const Affine& raw : keep.le) {
    const Affine d = remap(raw, unit);
    if (always(d)) continue;
    if (d.x == causal_terms.x && neg_offset && d.c == *neg_offset) {  // j <= i + offset
      f.causal = true;
      continue;
    }
    // j >= i + offset - (w - 1): w = offset - c + 1, a static size.
    auto w = d.x == window_terms.x ? lin_add(s.offset, d.c, -1) : std::nullopt;
    if (!w || !w->is_static() || w->c < 0 || w->c >= ops::kMaxAttrExtent || (f.window && f.window != w->c + 1))
      return std::nullopt;
    f.window = w->c + 1;
  }
  for (const KeyRead& k : keep.keys) {
    if (!(remap(k.row, unit) == batch_index) || !(remap(k.col, unit) == key_index) || rank_of(g, k.src) != 2)
      return std::nullopt;
    const ir::ValueId src = key_source(g, idx, k.src);
    if (src == ir::kNoValue || (f.key_mask != ir::kNoValue && f.key_mask != src)) return std::nullopt;
    f.key_mask = src;
    *read_src = k.src;
  }
  return f;
}

// How the mask rewrites for Attention node n (before its layouts are absorbed: bshd 0), if it does.
std::optional<std::pair<Folded, float>> fold(const ir::Graph& g, const GraphIndex& idx, DimTracer& tr,
                                             MaskForms& forms, const ir::Node& n) {
  auto keep = keep_condition(g, idx, n);
  auto kt = n.attr_int("k_transposed", 0);
  if (!keep || !kt.ok()) return std::nullopt;
  const ir::ValueId q = n.inputs[0], k = n.inputs[1], y = n.outputs[0];
  Scores s;
  s.r = static_cast<int>(rank_of(g, y));
  const int rc = static_cast<int>(rank_of(g, keep->cond));
  if (s.r < 3 || static_cast<int>(rank_of(g, q)) != s.r || rc == 0 || rc > s.r) return std::nullopt;
  for (int a = 0; a < s.r; ++a) s.dims.push_back(a == s.r - 1 ? tr.dim(k, *kt ? -1 : -2) : tr.dim(q, a));
  const auto &sq = s.dims[static_cast<size_t>(s.r - 2)], &skv = s.dims[static_cast<size_t>(s.r - 1)];
  auto offset = sq && skv ? lin_add(Lin::of(*skv), Lin::of(*sq), -1) : std::nullopt;
  if (!offset) return std::nullopt;
  s.offset = *offset;
  // The mask's axes on the scores': static 1 (broadcast) or proven equal. The key axis may
  // instead be the length of the attention_mask row the keys are read from (TorchScript names the
  // mask's dims apart from input_ids'): the op refuses a key_mask shorter than Skv, and a longer
  // one would not have broadcast against the scores.
  std::vector<int> to(static_cast<size_t>(rc), -1);
  std::optional<SymDim> key_len;
  for (int c = 0; c < rc; ++c) {
    const int a = c + s.r - rc;
    auto d = tr.dim(keep->cond, c);
    if (!d) return std::nullopt;
    if (d->is(1)) continue;
    const auto& want = s.dims[static_cast<size_t>(a)];
    if (!(want && *want == *d)) {
      if (a != s.r - 1) return std::nullopt;
      key_len = d;
    }
    to[static_cast<size_t>(c)] = a;
  }
  auto f = forms.form(keep->cond);
  if (f && f->kind == MaskForm::Kind::kGathered && g.value(keep->cond).dtype == DataType::kBool)
    f = MaskForm{MaskForm::Kind::kBool, {}, {}, {f->read}, {}};
  if (!f || f->kind != MaskForm::Kind::kBool) return std::nullopt;
  ir::ValueId read_src = ir::kNoValue;
  auto folded = classify(g, idx, remap(*f, to), s, &read_src);
  if (!folded) return std::nullopt;
  if (key_len) {
    auto cols = read_src != ir::kNoValue ? tr.dim(read_src, 1) : std::nullopt;
    if (!cols || !(*cols == *key_len)) return std::nullopt;
  }
  return std::make_pair(*folded, keep->fill);
}

// The output dims with the new inputs, when they agree with the node's where both are known.
std::optional<Dims> folded_output(const ir::Graph& g, const ir::Node& n, const Folded& f, bool k_transposed,
                                  int64_t kv_group) {
  const ir::Value &q = g.value(n.inputs[0]), &k = g.value(n.inputs[1]), &v = g.value(n.inputs[2]);
  const ir::Value* km = f.key_mask != ir::kNoValue ? &g.value(f.key_mask) : nullptr;
  if (!q.has_shape || !k.has_shape || !v.has_shape || (km && !km->has_shape)) return std::nullopt;
  auto out = ops::attention_output_dims(n, q.dims, k.dims, v.dims, nullptr, km ? &km->dims : nullptr, k_transposed, 0,
                                       kv_group);
  const ir::Value& y = g.value(n.outputs[0]);
  if (!out.ok() || !y.has_shape || out->size() != y.dims.size()) return std::nullopt;
  for (size_t a = 0; a < out->size(); ++a)
    if ((*out)[a] >= 0 && y.dims[a] >= 0 && (*out)[a] != y.dims[a]) return std::nullopt;
  return *out;
}

// Without the mask the output no longer broadcasts against it: dims inference left unknown (a mask
// built at run time) may be known now, and later layers' dims trace back to them. True when a dim
// became known.
bool tighten(ir::Graph& g, const ir::Node& n, const Dims& out) {
  Dims& y = g.value(n.outputs[0]).dims;
  bool changed = false;
  for (size_t a = 0; a < y.size(); ++a)
    if (y[a] < 0 && out[a] >= 0) y[a] = out[a], changed = true;
  return changed;
}

bool is_attention(const ir::Node& n) { return n.op_type == "Attention" && n.domain.empty(); }

// An additive constant mask of zeros (what a static build folds an all-keep mask into) adds nothing.
bool zero_mask(const ir::Graph& g, const ir::Node& n) {
  const Tensor* t = g.constant(n.inputs[3]);
  if (!t || !is_float(t->dtype())) return false;
  auto v = t->to_float_vector();
  return v.ok() && std::all_of(v->begin(), v->end(), [](float x) { return x == 0.f; });
}

}  // namespace

size_t fold_attention_masks(ir::Graph& g) {
  GraphIndex idx(g);
  // Traced dims are memoized: a fold that tightens an output starts a fresh tracer.
  auto tr = std::make_unique<DimTracer>(g, idx);
  auto forms = std::make_unique<MaskForms>(g, idx, *tr);
  size_t folded = 0;
  for (ir::Node& n : g.nodes) {
    if (!is_attention(n) || n.inputs.size() != 4 || n.inputs[3] == ir::kNoValue || n.outputs.empty()) continue;
    auto causal = n.attr_int("causal", 0), window = n.attr_int("window", 0), bshd = n.attr_int("bshd", 0);
    auto kt = n.attr_int("k_transposed", 0), kv_group = n.attr_int("kv_group", 1);
    if (!causal.ok() || *causal || !window.ok() || *window || !bshd.ok() || *bshd || !kt.ok() || !kv_group.ok()) continue;
    std::optional<Dims> out;
    if (zero_mask(g, n) && (out = folded_output(g, n, Folded{}, *kt == 1, *kv_group))) {
      n.inputs.resize(3);
    } else {
      auto r = fold(g, idx, *tr, *forms, n);
      if (!r || !(out = folded_output(g, n, r->first, *kt == 1, *kv_group))) continue;
      const auto& [f, fill] = *r;
      n.inputs.resize(3);
      if (f.key_mask != ir::kNoValue) n.inputs.insert(n.inputs.end(), {ir::kNoValue, f.key_mask});
      if (f.causal) n.attrs["causal"] = ir::Attribute::make_int(1);
      if (f.window) n.attrs["window"] = ir::Attribute::make_int(f.window);
      if (std::isfinite(fill)) n.attrs["mask_fill"] = ir::Attribute::make_float(fill);
      else n.attrs.erase("mask_fill");
    }
    ++folded;
    if (tighten(g, n, *out)) {
      forms.reset();
      tr = std::make_unique<DimTracer>(g, idx);
      forms = std::make_unique<MaskForms>(g, idx, *tr);
    }
  }
  return folded;
}

}  // namespace streamrt::builder
