// Fusion: Add(MatMul(A, W), b) (either Add operand order) -> MatMul(A, W, b) with "__bias" = 1
// (ops/matmul.h), the form nn.Linear exports for 3-D inputs. The CUDA kernel adds b in the
// cuBLASLt epilogue instead of a separate element-wise pass over the output. A WeightOnlyMatMul
// (a weight the model stored quantized, builder/import_quantized.cc) takes b as its input 4.
//
// Only when nothing else can tell the difference: W a 2-D float constant [K, N], b a constant of
// W's dtype with dims [1, ..., 1, N] of rank <= the MatMul output's (so the Add neither broadcasts
// nor changes the shape), A of rank >= 2, and the MatMul output read by the Add alone (not a graph
// output). W and b stay the plan's weights under their own names (refit, weight streaming).
#include <string>

#include "builder/fusion.h"
#include "ops/matmul.h"
#include "ops/weight_quant.h"

namespace streamrt::builder {
namespace {

// True when `b` can be MatMul `mm`'s fused bias.
bool fusable(const ir::Graph& g, const ir::Node& mm, ir::ValueId b) {
  if (mm.inputs.size() != 2 || mm.outputs.size() != 1 || mm.inputs[0] == ir::kNoValue) return false;
  const ir::Value& a = g.value(mm.inputs[0]);
  const ir::Value& y = g.value(mm.outputs[0]);
  const Tensor* w = g.constant(mm.inputs[1]);
  const Tensor* bias = g.constant(b);
  if (!w || !bias || w->dims().size() != 2 || !is_float(w->dtype())) return false;
  if (a.dtype != w->dtype() || bias->dtype() != w->dtype() || !a.has_shape || a.dims.size() < 2) return false;
  const Dims& bd = bias->dims();
  if (bd.empty() || !y.has_shape || bd.size() > y.dims.size() || bd.back() != w->dims()[1]) return false;
  for (size_t i = 0; i + 1 < bd.size(); ++i)
    if (bd[i] != 1) return false;
  return true;
}

// The same for WeightOnlyMatMul `mm` without a bias: b [1, ..., 1, N] of A's type.
bool fusable_weight_only(const ir::Graph& g, const ir::Node& mm, ir::ValueId b) {
  if (mm.inputs.size() > 4 || mm.outputs.size() != 1 || mm.inputs[0] == ir::kNoValue) return false;
  auto f = ops::read_weight_quant_format(mm);
  const Tensor* bias = g.constant(b);
  const ir::Value& y = g.value(mm.outputs[0]);
  if (!f.ok() || !bias || bias->dtype() != g.value(mm.inputs[0]).dtype || !y.has_shape) return false;
  const Dims& bd = bias->dims();
  if (bd.empty() || bd.size() > y.dims.size() || bd.back() != f->n) return false;
  for (size_t i = 0; i + 1 < bd.size(); ++i)
    if (bd[i] != 1) return false;
  return true;
}

// Adds b to MatMul / WeightOnlyMatMul node n, which then writes the Add's output.
bool fuse_into(const ir::Graph& g, ir::Node& n, ir::ValueId b, const std::vector<ir::ValueId>& out) {
  if (n.op_type == "MatMul") {
    if (!fusable(g, n, b)) return false;
    n.inputs.push_back(b);
    n.attrs[ops::kMatMulBiasAttr] = ir::Attribute::make_int(1);
  } else {
    if (!fusable_weight_only(g, n, b)) return false;
    n.inputs.resize(4, ir::kNoValue);  // no zero points: an absent input 3
    n.inputs.push_back(b);
  }
  n.outputs = out;
  return true;
}

}  // namespace

size_t fuse_matmul_bias(ir::Graph& g) {
  GraphIndex idx(g);
  return fuse_adds(g, idx, [&](int add, int side) {
    const ir::ValueId product = g.nodes[add].inputs[side];
    int mm = idx.producer_if(product, "MatMul");
    if (mm < 0) mm = idx.producer_if(product, ops::kWeightOnlyMatMul);
    if (mm < 0 || idx.single_consumer(product) != add) return -1;
    const ir::Node a = g.nodes[add];
    return fuse_into(g, g.nodes[mm], a.inputs[1 - side], a.outputs) ? add : -1;
  });
}

}  // namespace streamrt::builder
