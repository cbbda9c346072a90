// Fusion: a tree of float element-wise ops whose inner results each have one reader becomes one
// FusedElementwise node (one pass over memory instead of one per op).
#include <functional>
#include <map>

#include "builder/fusion.h"
#include "ops/fused_elementwise.h"

namespace streamrt::builder {
namespace {

// Element-wise, float, every input of the output's type, one output.
bool fusable(const ir::Graph& g, const ir::Node& n) {
  auto op = ops::fused::opcode_of(n);  // the op's registration says whether it fuses
  if (!op || n.outputs.size() != 1 || n.outputs[0] == ir::kNoValue) return false;
  const size_t arity = ops::fused::is_binary(*op) ? 2 : 1;
  if (n.inputs.size() != arity) return false;
  const DataType t = g.value(n.outputs[0]).dtype;
  if (!is_float(t)) return false;
  for (ir::ValueId in : n.inputs)
    if (in == ir::kNoValue || g.value(in).dtype != t || !g.value(in).has_shape) return false;
  return true;
}

}  // namespace

size_t fuse_elementwise(ir::Graph& g) {
  GraphIndex idx(g);
  const size_t n = g.nodes.size();
  std::vector<bool> ok(n);
  std::vector<std::vector<int>> members(n);
  std::vector<int> root(n, -1);
  for (size_t i = 0; i < n; ++i) {
    ok[i] = fusable(g, g.nodes[i]);
    if (!ok[i]) continue;
    members[i] = {static_cast<int>(i)};
    root[i] = static_cast<int>(i);
    for (ir::ValueId in : g.nodes[i].inputs) {
      int p = idx.producer(in);
      if (p < 0 || !ok[p] || root[p] != p || idx.single_consumer(in) != static_cast<int>(i)) continue;
      // A tree stops growing at the kernel's register file (kMaxInstructions ops): a longer chain
      // becomes consecutive fused steps of up to that many ops. Growing it further would only
      // get it rejected below, after copying its members at every merge (quadratic on chains).
      if (members[i].size() + members[p].size() > static_cast<size_t>(ops::fused::kMaxInstructions)) continue;
      for (int m : members[p]) root[m] = static_cast<int>(i);
      members[i].insert(members[i].end(), members[p].begin(), members[p].end());
      std::vector<int>().swap(members[p]);
    }
  }
  size_t fused = 0;
  for (size_t r = 0; r < n; ++r) {
    if (members[r].size() < 2) continue;
    // External inputs in first-use order, then instructions in post order.
    std::vector<ir::ValueId> externals;
    std::map<ir::ValueId, int> reg;
    std::function<void(int)> collect = [&](int node) {
      for (ir::ValueId in : g.nodes[node].inputs) {
        int p = idx.producer(in);
        if (p >= 0 && root[p] == static_cast<int>(r) && p != node) collect(p);
        else if (!reg.count(in)) {
          reg[in] = static_cast<int>(externals.size());
          externals.push_back(in);
        }
      }
    };
    collect(static_cast<int>(r));
    if (externals.size() > static_cast<size_t>(ops::fused::kMaxInputs) ||
        members[r].size() > static_cast<size_t>(ops::fused::kMaxInstructions))
      continue;
    std::vector<int64_t> program;
    int next = static_cast<int>(externals.size());
    std::function<int(int)> emit = [&](int node) -> int {
      const ir::Node& nd = g.nodes[node];
      int regs[2] = {0, 0};
      for (size_t k = 0; k < nd.inputs.size(); ++k) {
        int p = idx.producer(nd.inputs[k]);
        regs[k] = p >= 0 && root[p] == static_cast<int>(r) && p != node ? emit(p) : reg.at(nd.inputs[k]);
      }
      program.insert(program.end(), {*ops::fused::opcode_of(nd), regs[0], regs[1]});
      return next++;
    };
    emit(static_cast<int>(r));
    ir::Node f;
    f.name = g.nodes[r].name + "/fused";
    f.op_type = "FusedElementwise";
    f.opset = g.nodes[r].opset;
    f.inputs = externals;
    f.outputs = g.nodes[r].outputs;
    f.attrs["program"] = ir::Attribute::make_ints(std::move(program));
    for (int m : members[r])
      if (m != static_cast<int>(r)) idx.remove(m);
    g.nodes[r] = std::move(f);
    ++fused;
  }
  idx.compact();
  return fused;
}

}  // namespace streamrt::builder
