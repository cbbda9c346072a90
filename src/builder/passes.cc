#include "builder/passes.h"

#include <unordered_set>

#include "ir/shape_inference.h"

namespace streamrt::builder {

namespace {
// Folding materializes constants; refuse to create single constants over 1 GiB.
constexpr int64_t kMaxFoldElements = int64_t{1} << 28;
}  // namespace

Result<size_t> fold_constants(ir::Graph& g) {
  ir::InferOptions opts;
  opts.max_propagated_elements = kMaxFoldElements;
  opts.max_propagated_input_elements = kMaxFoldElements;
  SRT_ASSIGN_OR_RETURN(ir::InferResult r, ir::infer_shapes(g, opts));
  std::vector<ir::Node> kept;
  size_t folded = 0;
  for (auto& node : g.nodes) {
    bool all_known = !node.outputs.empty();
    for (ir::ValueId o : node.outputs)
      if (o != ir::kNoValue && !r.values[o]) all_known = false;
    if (!all_known) {
      kept.push_back(std::move(node));
      continue;
    }
    for (ir::ValueId o : node.outputs)
      if (o != ir::kNoValue) g.set_constant(o, std::move(*r.values[o]));
    ++folded;
  }
  g.nodes = std::move(kept);
  return folded;
}

size_t remove_identities(ir::Graph& g) {
  std::unordered_set<ir::ValueId> graph_outputs(g.outputs.begin(), g.outputs.end());
  std::unordered_map<ir::ValueId, ir::ValueId> replace;
  std::vector<ir::Node> kept;
  size_t removed = 0;
  auto resolve = [&](ir::ValueId v) {
    auto it = replace.find(v);
    return it == replace.end() ? v : it->second;
  };
  for (auto& node : g.nodes) {
    for (auto& in : node.inputs)
      if (in != ir::kNoValue) in = resolve(in);
    // A Concat of one tensor is that tensor (TorchScript exports route a KV cache's first past
    // through one: Concat(Concat(past), new)).
    bool identity = node.domain.empty() && (node.op_type == "Identity" || node.op_type == "Dropout" ||
                                            (node.op_type == "Concat" && node.inputs.size() == 1));
    if (node.op_type == "Dropout") {
      // Only the plain inference form: no mask consumer, no training_mode input.
      bool mask_used = node.outputs.size() > 1 && node.outputs[1] != ir::kNoValue;
      bool training_input = node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue;
      identity = !mask_used && !training_input;
    }
    if (identity && !node.inputs.empty() && node.inputs[0] != ir::kNoValue &&
        !graph_outputs.count(node.outputs[0])) {
      replace[node.outputs[0]] = node.inputs[0];
      ++removed;
      continue;
    }
    kept.push_back(std::move(node));
  }
  g.nodes = std::move(kept);
  return removed;
}

size_t remove_dead_code(ir::Graph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (ir::ValueId o : g.outputs) live[o] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const ir::Node& n = g.nodes[i];
    bool needed = false;
    for (ir::ValueId o : n.outputs)
      if (o != ir::kNoValue && live[o]) needed = true;
    if (!needed) continue;
    keep[i] = true;
    for (ir::ValueId in : n.inputs)
      if (in != ir::kNoValue) live[in] = true;
  }
  std::vector<ir::Node> kept;
  size_t removed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(g.nodes[i]));
    else ++removed;
  }
  g.nodes = std::move(kept);
  for (auto it = g.constants.begin(); it != g.constants.end();) {
    if (!live[it->first]) it = g.constants.erase(it);
    else ++it;
  }
  return removed;
}

}  // namespace streamrt::builder
