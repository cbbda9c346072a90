// Pairing: two Rotary steps -> one step of two rotations (ops/rotary.cc), launched once. A
// transformer layer rotates its Q and its K, each a few microseconds of mostly fixed launch cost at
// prefill and decode sizes (a 1 MB rotation took ~4 us on an H200 in ncu, one of 16 MB ~8 us); one
// launch for both saves one of those a layer. Pairs are consecutive single Rotary steps of one
// type where nothing between them reads the first's output (so neither reads the other's): the
// pair takes the second's place, where both rotations' inputs are ready. Their cos / sin may
// differ (K may be laid out [B, H, S, D] for a KV cache while Q reads [B, S, H, D]).
#include "builder/fusion.h"
#include "ops/rotary.h"

namespace streamrt::builder {
namespace {

bool single_rotary(const ir::Node& n) {
  return n.op_type == "Rotary" && n.domain.empty() && ops::rotary_parts(n.inputs.size(), n.outputs.size()) == 1 &&
         n.inputs[0] != ir::kNoValue && n.outputs[0] != ir::kNoValue;
}

}  // namespace

size_t pair_rotaries(ir::Graph& g) {
  GraphIndex idx(g);
  size_t pairs = 0;
  for (size_t e = 0; e < g.nodes.size(); ++e) {
    if (idx.removed(e) || !single_rotary(g.nodes[e])) continue;
    size_t l = e + 1;
    while (l < g.nodes.size() && (idx.removed(l) || !single_rotary(g.nodes[l]))) ++l;
    if (l == g.nodes.size()) break;
    const ir::Node &first = g.nodes[e], &second = g.nodes[l];
    if (g.value(first.inputs[0]).dtype != g.value(second.inputs[0]).dtype) continue;
    bool later = true;  // every reader of the first's output runs after the second
    for (int c : idx.consumers(first.outputs[0]))
      if (!idx.removed(static_cast<size_t>(c)) && static_cast<size_t>(c) <= l) later = false;
    if (!later) continue;
    ir::Node n;
    n.name = first.name + "+" + second.name;
    n.op_type = "Rotary";
    n.opset = second.opset;
    n.inputs = first.inputs;
    n.inputs.insert(n.inputs.end(), second.inputs.begin(), second.inputs.end());
    n.outputs = {first.outputs[0], second.outputs[0]};
    idx.remove(static_cast<int>(e));
    g.nodes[l] = std::move(n);
    ++pairs;
    e = l;
  }
  if (pairs > 0) idx.compact();
  return pairs;
}

}  // namespace streamrt::builder
