#include "builder/weight_matmul.h"

#include "ops/gemm.h"
#include "ops/matmul.h"

namespace streamrt::builder {

std::optional<WeightMatMul> weight_matmul(const ir::Graph& g, size_t i) {
  const ir::Node& n = g.nodes[i];
  if (!n.domain.empty() || n.inputs.size() < 2 || n.outputs.empty() || n.inputs[0] == ir::kNoValue ||
      n.inputs[1] == ir::kNoValue || g.is_constant(n.inputs[0]))
    return std::nullopt;
  const ir::Value& w = g.value(n.inputs[1]);
  if (!w.has_shape || w.dims.size() != 2 || w.dims[0] <= 0 || w.dims[1] <= 0) return std::nullopt;
  WeightMatMul c{i, n.inputs[1]};
  if (n.op_type == "MatMul") {
    if (n.inputs.size() > 2) {
      if (!ops::matmul_has_bias_attr(n) || n.inputs.size() != 3) return std::nullopt;
      c.bias = n.inputs[2];
    }
  } else if (n.op_type == "Gemm") {
    auto at = ops::read_gemm_attrs(n);
    if (!at.ok() || at->trans_a || at->alpha != 1.f) return std::nullopt;
    c.trans = at->trans_b;
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) {
      // C as a bias: added to every row, [N] or [1, N].
      const ir::Value& cv = g.value(n.inputs[2]);
      const int64_t cols = w.dims[c.trans ? 0 : 1];
      const bool row = cv.has_shape && !cv.dims.empty() && cv.dims.size() <= 2 && cv.dims.back() == cols &&
                       (cv.dims.size() == 1 || cv.dims[0] == 1);
      if (at->beta != 1.f || !row) return std::nullopt;
      c.bias = n.inputs[2];
    }
  } else {
    return std::nullopt;
  }
  c.k = w.dims[c.trans ? 1 : 0];
  c.n = w.dims[c.trans ? 0 : 1];
  return c;
}

void make_weight_only_matmul(ir::Graph& g, const WeightMatMul& m, const WeightOnlyInputs& w) {
  ir::Node& n = g.nodes[m.node];
  std::vector<ir::ValueId> inputs = {n.inputs[0], w.packed, w.scales};
  if (w.zeros != ir::kNoValue || m.bias != ir::kNoValue) inputs.push_back(w.zeros);
  if (m.bias != ir::kNoValue) inputs.push_back(m.bias);
  n.op_type = ops::kWeightOnlyMatMul;
  n.domain.clear();  // MatMulNBits' com.microsoft
  n.opset = 1;
  n.inputs = std::move(inputs);
  n.attrs.clear();
  ops::set_weight_quant_attrs(n, w.fmt);
  n.attrs["__n_offset"] = ir::Attribute::make_int(0);
}

ir::ValueId add_constant(ir::Graph& g, const std::string& name, Tensor t) {
  ir::ValueId v = g.add_value(name, t.dtype(), t.dims(), true);
  g.set_constant(v, std::move(t));
  return v;
}

}  // namespace streamrt::builder
