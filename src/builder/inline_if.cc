// Build-time If: most exported If nodes test something the builder knows (a shape, a constant
// flag), so the branch taken is known before any run. Such an If becomes its branch's nodes,
// spliced in where it stood; the rest of the builder (fusions, memory plan, CUDA kernels) then
// sees ordinary nodes. An If whose cond depends on data stays and runs on the host.
#include "builder/passes.h"
#include "ir/subgraph.h"

namespace streamrt::builder {
namespace {

// A name not yet used in `g`, from `base`.
std::string fresh_name(const ir::Graph& g, std::string base) {
  while (g.find_value(base) != ir::kNoValue) base += "'";
  return base;
}

// Replaces If node `node` (cond known to be `cond`) by the nodes of the branch taken, appended to `out`.
void splice_branch(ir::Graph& g, const ir::Node& node, const ir::Graph& branch, std::vector<ir::Node>& out) {
  std::vector<ir::ValueId> map(branch.values.size(), ir::kNoValue);
  for (size_t i = 0; i < branch.inputs.size(); ++i) map[branch.inputs[i]] = node.inputs[1 + i];
  for (const auto& [id, t] : branch.constants) {
    map[id] = g.add_value(fresh_name(g, node.name + "/" + branch.value(id).name));
    g.set_constant(map[id], t);
  }
  // A branch output that a branch node makes is written straight into the If's output.
  std::vector<bool> claimed(branch.values.size(), false);
  std::vector<bool> produced(branch.values.size(), false);
  for (const ir::Node& n : branch.nodes)
    for (ir::ValueId o : n.outputs)
      if (o != ir::kNoValue) produced[o] = true;
  for (size_t k = 0; k < branch.outputs.size(); ++k) {
    const ir::ValueId b = branch.outputs[k];
    if (produced[b] && !claimed[b] && node.outputs[k] != ir::kNoValue) {
      map[b] = node.outputs[k];
      claimed[b] = true;
    }
  }
  for (const ir::Node& n : branch.nodes) {
    ir::Node copy = n;
    copy.name = node.name + "/" + n.name;
    for (ir::ValueId& o : copy.outputs) {
      if (o == ir::kNoValue) continue;
      if (map[o] == ir::kNoValue) {
        const ir::Value& v = branch.value(o);
        map[o] = g.add_value(fresh_name(g, node.name + "/" + v.name), v.dtype, v.dims, v.has_shape);
        g.value(map[o]).seq = v.seq;
      }
      o = map[o];
    }
    for (ir::ValueId& in : copy.inputs)
      if (in != ir::kNoValue) in = map[in];
    out.push_back(std::move(copy));
  }
  // Outputs that are a capture, a constant, or another output of the branch: copied.
  for (size_t k = 0; k < branch.outputs.size(); ++k) {
    const ir::ValueId b = branch.outputs[k];
    if (node.outputs[k] == ir::kNoValue || map[b] == node.outputs[k]) continue;
    ir::Node id;
    id.name = node.name + "/output_" + std::to_string(k);
    id.op_type = "Identity";
    id.opset = 13;
    id.inputs = {map[b]};
    id.outputs = {node.outputs[k]};
    out.push_back(std::move(id));
  }
}

// One sweep; returns how many If nodes it replaced.
size_t inline_once(ir::Graph& g) {
  std::vector<ir::Node> out;
  size_t inlined = 0;
  for (ir::Node& node : g.nodes) {
    const Tensor* cond = node.op_type == "If" && node.domain.empty() && !node.inputs.empty() &&
                                 node.inputs[0] != ir::kNoValue
                             ? g.constant(node.inputs[0])
                             : nullptr;
    auto then_g = node.attr_graph("then_branch");
    auto else_g = node.attr_graph("else_branch");
    if (!cond || cond->dtype() != DataType::kBool || cond->numel() != 1 || !then_g.ok() || !else_g.ok()) {
      out.push_back(std::move(node));
      continue;
    }
    const ir::Graph& branch = *cond->data_as<bool>() ? **then_g : **else_g;
    if (branch.inputs.size() + 1 != node.inputs.size() || branch.outputs.size() != node.outputs.size()) {
      out.push_back(std::move(node));  // malformed: left to the shape rule's error
      continue;
    }
    splice_branch(g, node, branch, out);
    ++inlined;
  }
  g.nodes = std::move(out);
  return inlined;
}

}  // namespace

Result<size_t> inline_constant_ifs(ir::Graph& g) {
  size_t total = 0;
  // Branches may hold Ifs whose cond folds once they are spliced in: a few rounds.
  for (int round = 0; round <= ir::kMaxSubgraphDepth; ++round) {
    const size_t n = inline_once(g);
    if (n == 0) break;
    total += n;
    SRT_ASSIGN_OR_RETURN(size_t folded, fold_constants(g));
    (void)folded;
  }
  return total;
}

}  // namespace streamrt::builder
