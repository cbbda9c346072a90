// Fusion: X * cos + Concat(Neg(Slice(X, D/2:)), Slice(X, :D/2)) * sin  ->  Rotary(X, cos, sin).
// The rotate-half form of rotary position embeddings (Llama and its relatives), five kernels and
// four intermediate tensors per query / key tensor unfused. Either operand order of the Add and
// of each Mul; Slice in its opset-1 (attributes) or opset-10 (inputs) form over the last axis.
// Intermediates must have no other consumer; X's last axis must be static and even.
// BuilderConfig::passes.rotary_fusion off skips the pass (a diagnostic).
#include <string>

#include "builder/fusion.h"

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
  return fused;
}

}  // namespace streamrt::builder
