// Fusion: the MatMuls that read one activation X by 2-D constant weights -> one MatMulGroup step
// (ops/matmul_group.h), with
//  - the RMSNormalization that produces X, when the group's MatMuls are X's only readers (a
//    layer's input norm before Q / K / V, the post-attention norm before gate / up, the final
//    norm before the LM head: a group of one is worth it then), and
//  - the SwiGLU gate (FusedElementwise's silu(a) * b) when it alone reads a group of two.
// A decode token then launches one GEMV for all of a group's weights, normalizing X as it stages
// it and gating in its epilogue, instead of up to five kernels (H200 figures: docs/benchmarks.md).
//
// Weights keep their own names and tensors (refit, the engine cache): nothing is concatenated.
// Members are plain MatMuls by a 2-D float constant of X's type, with or without a fused bias
// (a constant) and without a residual (those steps write into the residual stream, never share X
// with another MatMul in the layers we fuse). At most three a group: more readers of X (rare)
// make groups of three in order, with no normalization or gate. The group takes the place of its
// first member: every input it reads is there before that member runs.
#include <algorithm>

#include "builder/fusion.h"
#include "ops/fused_elementwise.h"
#include "ops/matmul.h"
#include "ops/matmul_group.h"

namespace streamrt::builder {
namespace {

// True when `n` can be a member of X's group.
bool member(const ir::Graph& g, const ir::Node& n, ir::ValueId x) {
  if (n.op_type != "MatMul" || !n.domain.empty() || n.outputs.size() != 1 || n.outputs[0] == ir::kNoValue ||
      n.inputs.size() < 2 || n.inputs.size() > 3 || n.inputs[0] != x || n.inputs[1] == x ||
      ops::matmul_has_residual_attr(n))
    return false;
  const bool bias = n.inputs.size() == 3 && n.inputs[2] != ir::kNoValue;
  if (bias && (!ops::matmul_has_bias_attr(n) || !g.is_constant(n.inputs[2]))) return false;
  const Tensor* w = g.constant(n.inputs[1]);
  const ir::Value& xv = g.value(x);
  const ir::Value& y = g.value(n.outputs[0]);
  if (!w || w->dims().size() != 2 || w->dtype() != xv.dtype || !is_float(xv.dtype)) return false;
  return xv.has_shape && !xv.dims.empty() && xv.dims.back() == w->dims()[0] && y.has_shape &&
         y.dims.size() == xv.dims.size() && y.dtype == xv.dtype;
}

// The RMSNormalization producing x that the group may absorb (over x's last axis, a [K] scale,
// x read by the members alone), or -1.
int absorbable_norm(const ir::Graph& g, const GraphIndex& idx, ir::ValueId x, const std::vector<int>& members) {
  const int p = idx.producer_if(x, "RMSNormalization");
  if (p < 0 || idx.is_output(x)) return -1;
  const ir::Node& norm = g.nodes[static_cast<size_t>(p)];
  const ir::Value& xv = g.value(x);
  if (norm.inputs.size() != 2 || norm.inputs[1] == ir::kNoValue || norm.outputs.size() != 1) return -1;
  auto axis = norm.attr_int("axis", -1);
  const int64_t rank = static_cast<int64_t>(xv.dims.size());
  if (!axis.ok() || (*axis != -1 && *axis != rank - 1) || !norm.attr_float("epsilon", 1e-5f).ok()) return -1;
  const ir::Value& in = g.value(norm.inputs[0]);
  const ir::Value& scale = g.value(norm.inputs[1]);
  if (!in.has_shape || in.dims != xv.dims || in.dtype != xv.dtype || !scale.has_shape || scale.dtype != xv.dtype ||
      scale.dims != Dims{xv.dims.back()})
    return -1;
  for (int c : idx.consumers(x))
    if (std::find(members.begin(), members.end(), c) == members.end()) return -1;
  return p;
}

// The FusedElementwise SwiGLU gate that alone reads both members' products, with *gate_first
// telling whether members[0] is the gated one; -1 when there is none.
int absorbable_gate(const ir::Graph& g, const GraphIndex& idx, const std::vector<int>& members, bool* gate_first) {
  if (members.size() != 2) return -1;
  const ir::ValueId p0 = g.nodes[static_cast<size_t>(members[0])].outputs[0];
  const ir::ValueId p1 = g.nodes[static_cast<size_t>(members[1])].outputs[0];
  const int f = idx.single_consumer(p0);
  if (f < 0 || f != idx.single_consumer(p1) || g.value(p0).dims != g.value(p1).dims) return -1;
  const ir::Node& fe = g.nodes[static_cast<size_t>(f)];
  if (fe.op_type != "FusedElementwise" || !fe.domain.empty() || fe.inputs.size() != 2 || fe.outputs.size() != 1)
    return -1;
  ops::fused::Program prog;
  std::string why;
  int gate = 0, up = 0;
  if (!ops::fused::decode(fe, 2, &prog, &why) || !ops::fused::match_gate(prog, &gate, &up)) return -1;
  const ir::Value& out = g.value(fe.outputs[0]);
  if (!out.has_shape || out.dims != g.value(p0).dims || out.dtype != g.value(p0).dtype) return -1;
  *gate_first = fe.inputs[static_cast<size_t>(gate)] == p0;
  return f;
}

std::string unused_name(const ir::Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 1; g.find_value(name) != ir::kNoValue; ++i) name = base + "_" + std::to_string(i);
  return name;
}

// Rewrites members (in graph order) into one MatMulGroup at members[0]'s place.
void make_group(ir::Graph& g, GraphIndex& idx, ir::ValueId x, std::vector<int> members, int norm, int gate,
                bool gate_first) {
  if (gate >= 0 && !gate_first) std::swap(members[0], members[1]);
  const int place = *std::min_element(members.begin(), members.end());
  const ir::Node& first = g.nodes[static_cast<size_t>(members[0])];
  ir::Node n;
  n.name = first.name + "_group";
  n.op_type = ops::kMatMulGroup;
  n.opset = first.opset;
  n.inputs.assign(ops::kMatMulGroupBias + ops::kMatMulGroupMax, ir::kNoValue);
  n.inputs[0] = x;
  if (norm >= 0) {
    const ir::Node& nn = g.nodes[static_cast<size_t>(norm)];
    n.inputs[0] = nn.inputs[0];
    n.inputs[ops::kMatMulGroupScale] = nn.inputs[1];
    n.attrs["epsilon"] = ir::Attribute::make_float(*nn.attr_float("epsilon", 1e-5f));
  }
  for (size_t i = 0; i < members.size(); ++i) {
    const ir::Node& m = g.nodes[static_cast<size_t>(members[i])];
    n.inputs[ops::kMatMulGroupWeight + i] = m.inputs[1];
    if (m.inputs.size() == 3) n.inputs[ops::kMatMulGroupBias + i] = m.inputs[2];
    if (gate < 0) n.outputs.push_back(m.outputs[0]);
  }
  while (n.inputs.back() == ir::kNoValue) n.inputs.pop_back();
  if (gate >= 0) {
    n.attrs["gate"] = ir::Attribute::make_int(1);
    n.outputs.push_back(g.nodes[static_cast<size_t>(gate)].outputs[0]);
  }
  if (norm >= 0 || gate >= 0) {
    // Its dims come from the shape rule (builder.cc infers the graph again after this pass).
    const DataType t = g.value(n.inputs[0]).dtype;
    n.outputs.push_back(g.add_value(unused_name(g, n.name + "_scratch"), t));
  }
  for (int m : members)
    if (m != place) idx.remove(m);
  if (norm >= 0) idx.remove(norm);
  if (gate >= 0) idx.remove(gate);
  g.nodes[static_cast<size_t>(place)] = std::move(n);
}

}  // namespace

size_t fuse_matmul_groups(ir::Graph& g) {
  GraphIndex idx(g);
  const size_t before = g.nodes.size();
  size_t groups = 0;
  std::vector<bool> done(g.values.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (idx.removed(i)) continue;
    const ir::Node& n = g.nodes[i];
    if (n.op_type != "MatMul" || !n.domain.empty() || n.inputs.empty() || n.inputs[0] == ir::kNoValue) continue;
    const ir::ValueId x = n.inputs[0];
    if (done[static_cast<size_t>(x)]) continue;
    done[static_cast<size_t>(x)] = true;
    std::vector<int> members;
    for (int c : idx.consumers(x))
      if (!idx.removed(static_cast<size_t>(c)) && std::find(members.begin(), members.end(), c) == members.end() &&
          member(g, g.nodes[static_cast<size_t>(c)], x))
        members.push_back(c);
    std::sort(members.begin(), members.end());
    if (members.empty()) continue;
    if (members.size() > static_cast<size_t>(ops::kMatMulGroupMax)) {
      for (size_t s = 0; s + 1 < members.size(); s += ops::kMatMulGroupMax) {
        std::vector<int> part(members.begin() + static_cast<long>(s),
                              members.begin() + static_cast<long>(std::min(members.size(), s + ops::kMatMulGroupMax)));
        make_group(g, idx, x, part, -1, -1, true);
        ++groups;
      }
      continue;
    }
    const int norm = absorbable_norm(g, idx, x, members);
    if (members.size() == 1 && norm < 0) continue;  // a lone MatMul: nothing to share
    bool gate_first = true;
    const int gate = absorbable_gate(g, idx, members, &gate_first);
    make_group(g, idx, x, members, norm, gate, gate_first);
    ++groups;
  }
  if (groups == 0) return 0;
  idx.compact();
  return before - g.nodes.size();
}

}  // namespace streamrt::builder
