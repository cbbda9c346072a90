#include "builder/quantize_weights.h"

#include <map>
#include <optional>

#include "ops/gemm.h"
#include "ops/matmul.h"
#include "ops/weight_quant.h"

namespace streamrt::builder {
namespace {

// A step that may read its weight compressed: the weight (input 1), how it is stored, and the
// bias it adds (kNoValue for none).
struct Candidate {
  size_t node;
  ir::ValueId weight, bias = ir::kNoValue;
  bool trans = false;
};

bool float_2d_constant(const ir::Graph& g, ir::ValueId v) {
  const Tensor* t = v == ir::kNoValue ? nullptr : g.constant(v);
  return t && is_float(t->dtype()) && t->dims().size() == 2 && t->dims()[0] > 0 && t->dims()[1] > 0;
}

std::optional<Candidate> candidate(const ir::Graph& g, size_t i) {
  const ir::Node& n = g.nodes[i];
  if (!n.domain.empty() || n.inputs.size() < 2 || n.outputs.empty() || n.inputs[0] == ir::kNoValue ||
      g.is_constant(n.inputs[0]) || !float_2d_constant(g, n.inputs[1]))
    return std::nullopt;
  Candidate c{i, n.inputs[1]};
  if (n.op_type == "MatMul") {
    if (n.inputs.size() > 2) {
      if (!ops::matmul_has_bias_attr(n) || n.inputs.size() != 3) return std::nullopt;
      c.bias = n.inputs[2];
    }
    return c;
  }
  if (n.op_type != "Gemm") return std::nullopt;
  auto at = ops::read_gemm_attrs(n);
  if (!at.ok() || at->trans_a || at->alpha != 1.f) return std::nullopt;
  c.trans = at->trans_b;
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) {
    // C as a bias: added to every row, [N] or [1, N].
    const ir::Value& cv = g.value(n.inputs[2]);
    const int64_t cols = g.constant(c.weight)->dims()[c.trans ? 0 : 1];
    const bool row = cv.has_shape && !cv.dims.empty() && cv.dims.size() <= 2 && cv.dims.back() == cols &&
                     (cv.dims.size() == 1 || cv.dims[0] == 1);
    if (at->beta != 1.f || !row) return std::nullopt;
    c.bias = n.inputs[2];
  }
  return c;
}

ir::ValueId add_constant(ir::Graph& g, const std::string& name, Tensor t) {
  ir::ValueId v = g.add_value(name, t.dtype(), t.dims(), true);
  g.set_constant(v, std::move(t));
  return v;
}

struct Packed {
  ir::ValueId packed, scales, zeros = ir::kNoValue;
  ops::WeightQuantFormat fmt;
};

Result<Packed> pack(ir::Graph& g, const Candidate& c, const WeightQuant& q) {
  const Tensor w = *g.constant(c.weight);  // a copy (shared storage): adding values may move g's
  const std::string name = g.value(c.weight).name;
  Packed p;
  p.fmt.bits = q.scheme == WeightQuantScheme::kInt4 ? 4 : 8;
  p.fmt.group = p.fmt.bits == 4 ? q.group : 0;
  p.fmt.k = w.dims()[c.trans ? 1 : 0];
  p.fmt.n = w.dims()[c.trans ? 0 : 1];
  SRT_ASSIGN_OR_RETURN(ops::QuantizedWeight qw, ops::quantize_weight(w, c.trans, 0, p.fmt, name));
  p.packed = add_constant(g, name + "::q", std::move(qw.packed));
  p.scales = add_constant(g, name + "::scales", std::move(qw.scales));
  if (p.fmt.bits == 4) p.zeros = add_constant(g, name + "::zeros", std::move(qw.zeros));
  return p;
}

void rewrite(ir::Graph& g, const Candidate& c, const Packed& p) {
  ir::Node& n = g.nodes[c.node];
  const Tensor* w = g.constant(c.weight);
  std::vector<ir::ValueId> inputs = {n.inputs[0], p.packed, p.scales};
  if (p.zeros != ir::kNoValue || c.bias != ir::kNoValue) inputs.push_back(p.zeros);
  if (c.bias != ir::kNoValue) inputs.push_back(c.bias);
  n.op_type = ops::kWeightOnlyMatMul;
  n.opset = 1;
  n.inputs = std::move(inputs);
  n.attrs.clear();
  n.attrs["bits"] = ir::Attribute::make_int(p.fmt.bits);
  n.attrs["group"] = ir::Attribute::make_int(p.fmt.group);
  n.attrs["K"] = ir::Attribute::make_int(p.fmt.k);
  n.attrs["N"] = ir::Attribute::make_int(p.fmt.n);
  n.attrs["__source"] = ir::Attribute::make_string(g.value(c.weight).name);
  n.attrs["__source_dims"] = ir::Attribute::make_ints(w->dims());
  n.attrs["__trans"] = ir::Attribute::make_int(c.trans);
  n.attrs["__n_offset"] = ir::Attribute::make_int(0);
}

}  // namespace

Result<size_t> quantize_weights(ir::Graph& g, const WeightQuant& q) {
  if (q.scheme == WeightQuantScheme::kNone) return size_t{0};
  if (q.scheme == WeightQuantScheme::kInt4 && q.group != 32 && q.group != 64 && q.group != 128)
    return invalid_argument("weight_quant int4: the group must be 32, 64 or 128, got " + std::to_string(q.group));
  std::vector<Candidate> cands;
  // Per weight: its candidate readers' count and orientation, and whether anything else reads it.
  std::map<ir::ValueId, std::pair<int, bool>> readers;
  std::map<ir::ValueId, bool> excluded;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (auto c = candidate(g, i)) {
      cands.push_back(*c);
      auto [it, fresh] = readers.emplace(c->weight, std::pair<int, bool>{0, c->trans});
      if (!fresh && it->second.second != c->trans) excluded[c->weight] = true;
      it->second.first++;
    }
  std::map<ir::ValueId, int> uses;
  for (const ir::Node& n : g.nodes)
    for (ir::ValueId v : n.inputs)
      if (readers.count(v)) uses[v]++;
  for (ir::ValueId o : g.outputs)
    if (readers.count(o)) excluded[o] = true;
  std::map<ir::ValueId, Packed> packed;
  size_t rewritten = 0;
  for (const Candidate& c : cands) {
    if (excluded[c.weight] || uses[c.weight] != readers[c.weight].first) continue;
    auto it = packed.find(c.weight);
    if (it == packed.end()) {
      SRT_ASSIGN_OR_RETURN(Packed p, pack(g, c, q));
      it = packed.emplace(c.weight, p).first;
    }
    rewrite(g, c, it->second);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace streamrt::builder

namespace streamrt {

Result<WeightQuant> parse_weight_quant(const std::string& spec) {
  WeightQuant q;
  if (spec == "none") return q;
  if (spec == "int8") {
    q.scheme = WeightQuantScheme::kInt8;
    return q;
  }
  if (spec == "int4" || spec == "int4:32" || spec == "int4:64" || spec == "int4:128") {
    q.scheme = WeightQuantScheme::kInt4;
    q.group = spec == "int4" ? 128 : std::stoi(spec.substr(5));
    return q;
  }
  return invalid_argument("weight quantization '" + spec + "': expected none, int8, int4 or int4:GROUP with GROUP 32, "
                          "64 or 128");
}

std::string weight_quant_name(const WeightQuant& q) {
  switch (q.scheme) {
    case WeightQuantScheme::kNone: return "none";
    case WeightQuantScheme::kInt8: return "int8";
    case WeightQuantScheme::kInt4: return "int4:" + std::to_string(q.group);
  }
  return "?";
}

}  // namespace streamrt
