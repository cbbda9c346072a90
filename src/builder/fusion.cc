#include "builder/fusion.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include <algorithm>

namespace streamrt::builder {

GraphIndex::GraphIndex(ir::Graph& g)
    : g_(g), producer_(g.values.size(), -1), consumers_(g.values.size()), is_output_(g.values.size(), false),
      removed_(g.nodes.size(), false) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (ir::ValueId o : g.nodes[i].outputs)
      if (o != ir::kNoValue) producer_[o] = static_cast<int>(i);
    for (ir::ValueId in : g.nodes[i].inputs)
      if (in != ir::kNoValue) consumers_[in].push_back(static_cast<int>(i));
  }
  for (ir::ValueId o : g.outputs) is_output_[o] = true;
}

int GraphIndex::producer_if(ir::ValueId v, const char* op_type) const {
  if (v == ir::kNoValue) return -1;
  int p = producer_[v];
  if (p < 0 || removed_[p] || g_.nodes[p].op_type != op_type || !g_.nodes[p].domain.empty()) return -1;
  return p;
}

int GraphIndex::single_consumer(ir::ValueId v) const {
  if (v == ir::kNoValue || is_output_[v] || consumers_[v].size() != 1) return -1;
  return removed_[consumers_[v][0]] ? -1 : consumers_[v][0];
}

bool GraphIndex::single_use_chain(const std::vector<int>& nodes, int root) const {
  for (int n : nodes)
    for (ir::ValueId o : g_.nodes[n].outputs) {
      if (o == ir::kNoValue) continue;
      if (is_output_[o]) return false;
      for (int c : consumers_[o])
        if (c != root && std::find(nodes.begin(), nodes.end(), c) == nodes.end()) return false;
    }
  return true;
}

bool GraphIndex::only_use_with_dead(const std::vector<int>& nodes, int root) const {
  std::unordered_set<int> absorbed(nodes.begin(), nodes.end());
  absorbed.insert(root);
  std::unordered_map<int, bool> memo;
  // A reader outside the chain is fine when everything it feeds, transitively, is the chain's
  // (shape arithmetic of the chain's own reshapes): it is dead once the chain is gone.
  std::function<bool(int, int)> dead_after = [&](int n, int depth) {
    if (absorbed.count(n)) return true;
    if (depth > 32) return false;
    if (auto it = memo.find(n); it != memo.end()) return it->second;
    memo[n] = false;
    bool dead = true;
    for (ir::ValueId o : g_.nodes[n].outputs) {
      if (o == ir::kNoValue) continue;
      dead = dead && !is_output_[o];
      for (int c : consumers_[o]) dead = dead && (removed_[c] || dead_after(c, depth + 1));
    }
    return memo[n] = dead;
  };
  for (int n : nodes)
    for (ir::ValueId o : g_.nodes[n].outputs) {
      if (o == ir::kNoValue) continue;
      if (is_output_[o]) return false;
      for (int c : consumers_[o])
        if (!removed_[c] && !dead_after(c, 0)) return false;
    }
  return true;
}

void GraphIndex::compact() {
  std::vector<ir::Node> kept;
  kept.reserve(g_.nodes.size());
  for (size_t i = 0; i < g_.nodes.size(); ++i)
    if (!removed_[i]) kept.push_back(std::move(g_.nodes[i]));
  g_.nodes = std::move(kept);
  removed_.assign(g_.nodes.size(), false);
}

// Constant int64 list of input `i` (opset >= 10 Slice inputs) or attribute `attr` (older opsets).
std::optional<std::vector<int64_t>> const_ints(const ir::Graph& g, const ir::Node& n, size_t i, const char* attr) {
  if (n.opset < 10) {
    auto a = n.attr_ints(attr, std::vector<int64_t>{});
    return a.ok() && n.has_attr(attr) ? std::optional(*a) : std::nullopt;
  }
  const Tensor* t = i < n.inputs.size() ? g.constant(n.inputs[i]) : nullptr;
  if (!t) return std::nullopt;
  auto v = t->to_int64_vector();
  return v.ok() ? std::optional(*v) : std::nullopt;
}

// False when optional input `i` is given but not a constant (const_ints would read it as absent).
bool constant_or_absent(const ir::Graph& g, const ir::Node& n, size_t i) {
  return n.opset < 10 || i >= n.inputs.size() || n.inputs[i] == ir::kNoValue || g.is_constant(n.inputs[i]);
}

ir::ValueId add_int64_constant(ir::Graph& g, const std::string& name, const std::vector<int64_t>& v) {
  const Dims dims = {static_cast<int64_t>(v.size())};
  const ir::ValueId c = g.add_value(name, DataType::kInt64, dims, true);
  g.set_constant(c, Tensor::from_vector(DataType::kInt64, dims, v));
  return c;
}

std::optional<std::vector<int64_t>> squeeze_axes(const ir::Graph& g, const ir::Node& n) {
  if (n.opset < 13) {
    auto a = n.attr_ints("axes", std::vector<int64_t>{});
    return a.ok() ? std::optional(*a) : std::nullopt;
  }
  if (n.inputs.size() < 2 || n.inputs[1] == ir::kNoValue) return std::vector<int64_t>{};
  const Tensor* t = g.constant(n.inputs[1]);
  auto v = t ? t->to_int64_vector() : Result<std::vector<int64_t>>(invalid_argument("not a constant"));
  return v.ok() ? std::optional(*v) : std::nullopt;
}

size_t fuse_adds(ir::Graph& g, GraphIndex& idx, const std::function<int(int add, int side)>& fuse) {
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& add = g.nodes[i];
    if (idx.removed(i) || add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2 ||
        add.outputs.size() != 1)
      continue;
    for (int side = 0; side < 2; ++side) {
      const int gone = fuse(static_cast<int>(i), side);
      if (gone < 0) continue;
      idx.remove(gone);
      ++fused;
      break;
    }
  }
  idx.compact();
  return fused;
}

size_t run_fusions(ir::Graph& g, const BuilderPasses& passes) {
  const size_t before = g.nodes.size();
  fuse_rms_norm(g);
  // Each before element-wise fusion, which would take their ops (attention's scale and mask,
  // rotary's Mul / Add, the bias Add, the Add and Relu after a Conv).
  if (passes.attention_fusion) fuse_attention(g);
  if (passes.rotary_fusion) fuse_rotary(g);
  if (passes.matmul_bias_fusion) fuse_matmul_bias(g);
  if (passes.conv_fusion) fuse_conv(g);
  fuse_elementwise(g);
  return before - g.nodes.size();
}

}  // namespace streamrt::builder
