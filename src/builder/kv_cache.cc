#include "builder/kv_cache.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/shape_inference.h"
#include "ops/attention.h"

namespace streamrt::builder {
namespace {

struct Use {
  size_t node;
  size_t slot;
};

struct Pair {
  size_t concat;  // the Concat node
  ir::ValueId past, present;
  int64_t axis = 0, capacity = 0;
  std::vector<size_t> attentions;  // nodes reading present as K or V
};

std::vector<std::vector<Use>> uses_of(const ir::Graph& g) {
  std::vector<std::vector<Use>> uses(g.values.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (size_t k = 0; k < g.nodes[n].inputs.size(); ++k)
      if (g.nodes[n].inputs[k] != ir::kNoValue) uses[static_cast<size_t>(g.nodes[n].inputs[k])].push_back({n, k});
  return uses;
}

bool reads_dims_only(const ir::Node& n, size_t slot) {
  const ops::OpSchema* s = ops::schema_of(n);
  return s && ops::lists_input(s->dims_only_inputs, slot);
}

// An Attention reading `slot` (1 = K, 2 = V) laid out [..., S, D] with S on `axis` of rank `rank`.
bool attention_reads_rows(const ir::Node& n, size_t slot, int64_t axis, size_t rank) {
  if (n.op_type != "Attention" || !n.domain.empty() || (slot != 1 && slot != 2)) return false;
  auto a = ops::attention_attrs(n, 1);
  if (!a.ok() || a->kv_capacity != 0 || static_cast<int64_t>(rank) - 2 != axis) return false;
  if (slot == 1) return !a->k_transposed && !(a->bshd & ops::kBshdK);
  return !(a->bshd & ops::kBshdV);
}

// The Concat(past, new) at node `c` as a candidate pair, or nullopt.
std::optional<Pair> candidate(const ir::Graph& g, const std::vector<std::vector<Use>>& uses,
                              const std::set<ir::ValueId>& inputs, const std::map<ir::ValueId, int>& outputs, size_t c) {
  const ir::Node& n = g.nodes[c];
  if (n.op_type != "Concat" || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  Pair p{c, n.inputs[0], n.outputs[0]};
  const ir::Value& past = g.value(p.past);
  if (!inputs.count(p.past) || !past.seq.is_tensor() || !past.has_shape || past.dims.size() < 2) return std::nullopt;
  if (n.inputs[1] == p.past || g.value(n.inputs[1]).dtype != past.dtype) return std::nullopt;
  auto out = outputs.find(p.present);
  if (out == outputs.end() || out->second != 1 || inputs.count(p.present)) return std::nullopt;
  auto axis = n.attr_int("axis");
  const auto rank = static_cast<int64_t>(past.dims.size());
  if (!axis.ok() || *axis < -rank || *axis >= rank) return std::nullopt;
  p.axis = *axis < 0 ? *axis + rank : *axis;
  for (const Use& u : uses[static_cast<size_t>(p.past)])
    if (u.node != c && !reads_dims_only(g.nodes[u.node], u.slot)) return std::nullopt;
  for (const Use& u : uses[static_cast<size_t>(p.present)]) {
    const ir::Node& reader = g.nodes[u.node];
    if (reads_dims_only(reader, u.slot)) continue;
    if (!attention_reads_rows(reader, u.slot, p.axis, past.dims.size())) return std::nullopt;
    p.attentions.push_back(u.node);
  }
  return p;
}

// Drops pairs until every Attention that reads one pair reads pairs of one capacity as both K and V.
void keep_consistent(const ir::Graph& g, std::map<ir::ValueId, Pair>& pairs) {
  auto bad = [&](size_t a) {
    auto k = pairs.find(g.nodes[a].inputs[1]), v = pairs.find(g.nodes[a].inputs[2]);
    return k == pairs.end() || v == pairs.end() || k->second.capacity != v->second.capacity;
  };
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<size_t> drop;
    for (const auto& [present, p] : pairs)
      for (size_t a : p.attentions)
        if (bad(a)) drop.push_back(a);
    for (size_t a : drop) {
      changed |= pairs.erase(g.nodes[a].inputs[1]) > 0;
      changed |= pairs.erase(g.nodes[a].inputs[2]) > 0;
    }
  }
}

}  // namespace

Result<KvCacheInPlace> store_kv_caches_in_place(ir::Graph& g,
                                                const std::unordered_map<ir::ValueId, InputProfile>& profiles,
                                                int64_t max_tensor_elements) {
  const std::set<ir::ValueId> inputs(g.inputs.begin(), g.inputs.end());
  std::map<ir::ValueId, int> outputs;
  for (ir::ValueId o : g.outputs) ++outputs[o];
  const auto uses = uses_of(g);
  std::map<ir::ValueId, Pair> pairs;  // by present
  for (size_t c = 0; c < g.nodes.size(); ++c)
    if (auto p = candidate(g, uses, inputs, outputs, c)) pairs.emplace(p->present, std::move(*p));
  if (pairs.empty()) return KvCacheInPlace{};

  // Capacity: present's length along the axis at the profile's max.
  ir::InferOptions max_opts;
  for (const auto& [id, p] : profiles) max_opts.input_dims[id] = p.max;
  max_opts.max_tensor_elements = max_tensor_elements;
  auto max_shapes = ir::infer_shapes_readonly(g, max_opts);
  if (!max_shapes.ok()) return max_shapes.status().with_context("KV cache: shapes at the profile's max");
  for (auto it = pairs.begin(); it != pairs.end();) {
    const ops::TensorInfo& info = max_shapes->infos[static_cast<size_t>(it->first)];
    const int64_t c = info.has_shape && info.dims.size() > static_cast<size_t>(it->second.axis)
                          ? info.dims[static_cast<size_t>(it->second.axis)] : -1;
    if (c < 1 || c > ops::kMaxAttrExtent) it = pairs.erase(it);
    else it++->second.capacity = c;
  }
  keep_consistent(g, pairs);

  KvCacheInPlace r;
  for (auto& [present, p] : pairs) {
    ir::Node& n = g.nodes[p.concat];
    n.op_type = "KvAppend";
    n.attrs.clear();
    n.attrs["axis"] = ir::Attribute::make_int(p.axis);
    n.attrs["capacity"] = ir::Attribute::make_int(p.capacity);
    for (size_t a : p.attentions) g.nodes[a].attrs["kv_capacity"] = ir::Attribute::make_int(p.capacity);
    ++r.pairs;
    r.capacity = std::max(r.capacity, p.capacity);
  }
  return r;
}

}  // namespace streamrt::builder
