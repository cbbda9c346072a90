// Fusion: X * cos + Concat(Neg(Slice(X, D/2:)), Slice(X, :D/2)) * sin  ->  Rotary(X, cos, sin).
// The rotate-half form of rotary position embeddings (Llama and its relatives), five kernels and
// four intermediate tensors per query / key tensor unfused. Either operand order of the Add and
// of each Mul; Slice in its opset-1 (attributes) or opset-10 (inputs) form over the last axis.
// Intermediates must have no other consumer; X's last axis must be static and even.
// BuilderConfig::passes.rotary_fusion off skips the pass (a diagnostic).
#include <map>
#include <string>

#include "builder/fusion.h"
#include "ops/attention.h"

namespace streamrt::builder {
namespace {

// [begin, end) of a Slice along the last axis of a rank-`rank` input of last dim `d` (unit
// step), clamped to [0, d]; nullopt for anything else.
std::optional<std::pair<int64_t, int64_t>> last_axis_range(const ir::Graph& g, const ir::Node& n, int64_t rank,
                                                           int64_t d) {
  auto starts = const_ints(g, n, 1, "starts"), ends = const_ints(g, n, 2, "ends");
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  if (!constant_or_absent(g, n, 3) || !constant_or_absent(g, n, 4)) return std::nullopt;
  auto axes = const_ints(g, n, 3, "axes"), steps = const_ints(g, n, 4, "steps");
  const int64_t axis = !axes ? 0 : axes->size() == 1 ? (*axes)[0] : -99;  // absent: axis 0
  if (axis != -1 && axis != rank - 1) return std::nullopt;
  if (steps && (steps->size() != 1 || (*steps)[0] != 1)) return std::nullopt;
  auto clamp = [&](int64_t v) { return v < 0 ? std::max<int64_t>(v + d, 0) : std::min(v, d); };
  return std::pair{clamp((*starts)[0]), clamp((*ends)[0])};
}

// If `v` is rotate_half(X) (Concat of Neg(Slice(X, h:)) and Slice(X, :h) on the last axis),
// appends its nodes to `chain` and returns X.
ir::ValueId rotate_half_source(const ir::Graph& g, const GraphIndex& idx, ir::ValueId v, std::vector<int>& chain) {
  const int cat = idx.producer_if(v, "Concat");
  if (cat < 0 || g.nodes[cat].inputs.size() != 2) return ir::kNoValue;
  const int neg = idx.producer_if(g.nodes[cat].inputs[0], "Neg");
  const int lo = idx.producer_if(g.nodes[cat].inputs[1], "Slice");
  const int hi = neg >= 0 ? idx.producer_if(g.nodes[neg].inputs[0], "Slice") : -1;
  if (lo < 0 || hi < 0) return ir::kNoValue;
  const ir::ValueId x = g.nodes[hi].inputs[0];
  if (g.nodes[lo].inputs[0] != x) return ir::kNoValue;
  const ir::Value& xv = g.value(x);
  const int64_t rank = static_cast<int64_t>(xv.dims.size());
  if (rank == 0 || !is_float(xv.dtype)) return ir::kNoValue;
  const int64_t d = xv.dims.back();
  auto axis = g.nodes[cat].attr_int("axis", 0);
  if (d <= 0 || d % 2 != 0 || !axis.ok() || (*axis != -1 && *axis != rank - 1)) return ir::kNoValue;
  auto r_hi = last_axis_range(g, g.nodes[hi], rank, d), r_lo = last_axis_range(g, g.nodes[lo], rank, d);
  if (!r_hi || !r_lo || *r_hi != std::pair<int64_t, int64_t>{d / 2, d} || *r_lo != std::pair<int64_t, int64_t>{0, d / 2})
    return ir::kNoValue;
  chain.insert(chain.end(), {cat, neg, hi, lo});
  return x;
}

}  // namespace

size_t fuse_rotary(ir::Graph& g) {
  size_t fused = 0;
  GraphIndex idx(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& add = g.nodes[i];
    if (idx.removed(i) || add.op_type != "Add" || add.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const int m_cos = idx.producer_if(add.inputs[side], "Mul"), m_sin = idx.producer_if(add.inputs[1 - side], "Mul");
      if (m_cos < 0 || m_sin < 0 || m_cos == m_sin) continue;
      std::vector<int> chain = {m_cos, m_sin};
      ir::ValueId x = ir::kNoValue, sin = ir::kNoValue;
      for (int k = 0; k < 2 && x == ir::kNoValue; ++k) {
        x = rotate_half_source(g, idx, g.nodes[m_sin].inputs[k], chain);
        sin = g.nodes[m_sin].inputs[1 - k];
      }
      if (x == ir::kNoValue) continue;
      const auto& mc = g.nodes[m_cos].inputs;
      if (mc[0] != x && mc[1] != x) continue;
      const ir::ValueId cos = mc[0] == x ? mc[1] : mc[0];
      const DataType t = g.value(x).dtype;
      if (g.value(cos).dtype != t || g.value(sin).dtype != t || g.value(add.outputs[0]).dims != g.value(x).dims) continue;
      if (!idx.single_use_chain(chain, static_cast<int>(i))) continue;
      ir::Node rotary;
      rotary.name = add.name + "/rotary";
      rotary.op_type = "Rotary";
      rotary.opset = 1;
      rotary.inputs = {x, cos, sin};
      rotary.outputs = add.outputs;
      for (int n : chain) idx.remove(n);
      add = std::move(rotary);
      ++fused;
      break;
    }
  }
  idx.compact();
  if (fused) absorb_rotary_transposes(g);
  return fused;
}

size_t absorb_rotary_transposes(ir::Graph& g) {
  GraphIndex idx(g);
  struct Rewrite {
    size_t attention, rotary, transpose;
    int input, bit;
  };
  std::vector<Rewrite> rewrites;
  std::vector<bool> drop(g.nodes.size(), false);
  // cos / sin ([.., 1, S, D], one row for all heads) can be read as [.., S, 1, D] in place.
  auto one_row_for_all_heads = [&](ir::ValueId c, int64_t d) {
    const ir::Value& v = g.value(c);
    const size_t r = v.dims.size();
    return v.has_shape && r >= 2 && r <= 4 && v.dims[r - 1] == d && (r < 3 || v.dims[r - 3] == 1);
  };
  for (size_t a = 0; a < g.nodes.size(); ++a) {
    const ir::Node& att = g.nodes[a];
    if (att.op_type != "Attention" || !att.domain.empty()) continue;
    auto bits = att.attr_int("bshd", 0), kt = att.attr_int("k_transposed", 0);
    if (!bits.ok() || !kt.ok()) continue;
    for (auto [input, bit] : {std::pair{0, ops::kBshdQ}, std::pair{1, ops::kBshdK}}) {
      if ((*bits & bit) || (input == 1 && *kt)) continue;
      const ir::ValueId y = att.inputs[input];
      const int r = idx.producer_if(y, "Rotary");
      if (r < 0 || idx.single_consumer(y) != static_cast<int>(a) || g.nodes[r].inputs.size() != 3) continue;
      const ir::Node& rot = g.nodes[r];
      const int t = idx.producer_if(rot.inputs[0], "Transpose");
      if (t < 0 || idx.single_consumer(rot.inputs[0]) != r) continue;
      auto perm = g.nodes[t].attr_ints("perm");
      const ir::Value& yv = g.value(y);
      if (!perm.ok() || *perm != std::vector<int64_t>{0, 2, 1, 3} || yv.dims.size() != 4 || yv.dims[3] < 1 ||
          !one_row_for_all_heads(rot.inputs[1], yv.dims[3]) || !one_row_for_all_heads(rot.inputs[2], yv.dims[3]))
        continue;
      rewrites.push_back({a, static_cast<size_t>(r), static_cast<size_t>(t), input, bit});
      drop[static_cast<size_t>(t)] = true;
    }
  }
  if (rewrites.empty()) return 0;
  // Views of cos / sin, one per tensor, placed right after the tensor is made (first for constants
  // and inputs): a MatMul group that runs before the rotary may take the rotation over
  // (fold_group_rotaries.cc) and read them.
  std::map<ir::ValueId, ir::ValueId> view_of;
  std::map<size_t, std::vector<ir::Node>> insert_before;
  auto view = [&](ir::ValueId c) {
    if (auto it = view_of.find(c); it != view_of.end()) return it->second;
    const size_t at = static_cast<size_t>(idx.producer(c) + 1);
    const ir::Value v = g.value(c);
    const int64_t d = v.dims.back(), rows = v.dims.size() >= 2 ? v.dims[v.dims.size() - 2] : 1;
    const bool lead = v.dims.size() == 4;
    const ir::ValueId shape = add_int64_constant(g, v.name + "/bshd_shape", {lead ? 0 : 1, -1, 1, d});
    const ir::ValueId out = g.add_value(v.name + "/bshd", v.dtype, {lead ? v.dims[0] : 1, rows, 1, d}, true);
    ir::Node n;
    n.name = v.name + "/bshd";
    n.op_type = "Reshape";
    n.opset = 14;
    n.inputs = {c, shape};
    n.outputs = {out};
    insert_before[at].push_back(std::move(n));
    return view_of[c] = out;
  };
  for (const Rewrite& w : rewrites) {
    ir::Node& rot = g.nodes[w.rotary];
    const ir::Value yv = g.value(rot.outputs[0]);
    const ir::ValueId x = g.nodes[w.transpose].inputs[0];
    const ir::ValueId cos = view(rot.inputs[1]), sin = view(rot.inputs[2]);
    const ir::ValueId y = g.add_value(yv.name + "/bshd", yv.dtype, {yv.dims[0], yv.dims[2], yv.dims[1], yv.dims[3]}, true);
    rot.inputs = {x, cos, sin};
    rot.outputs = {y};
    ir::Node& att = g.nodes[w.attention];
    att.inputs[static_cast<size_t>(w.input)] = y;
    att.attrs["bshd"] = ir::Attribute::make_int(att.attr_int("bshd", 0).value() | w.bit);
  }
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size() + insert_before.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (auto it = insert_before.find(i); it != insert_before.end())
      for (ir::Node& n : it->second) kept.push_back(std::move(n));
    if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  return rewrites.size();
}

}  // namespace streamrt::builder
