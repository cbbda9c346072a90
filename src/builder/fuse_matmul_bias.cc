// Fusion: Add(MatMul(A, W), b) (either Add operand order) -> MatMul(A, W, b) with "__bias" = 1
// (ops/matmul.h), the form nn.Linear exports for 3-D inputs. The CUDA kernel adds b in the
// cuBLASLt epilogue instead of a separate element-wise pass over the output.
//
// Only when nothing else can tell the difference: W a 2-D float constant [K, N], b a constant of
// W's dtype with dims [1, ..., 1, N] of rank <= the MatMul output's (so the Add neither broadcasts
// nor changes the shape), A of rank >= 2, and the MatMul output read by the Add alone (not a graph
// output). W and b stay the plan's weights under their own names (refit, weight streaming).
#include <string>

#include "builder/fusion.h"
#include "ops/matmul.h"

namespace streamrt::builder {
namespace {

bool float_type(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16; }

// True when `b` can be MatMul `mm`'s fused bias.
bool fusable(const ir::Graph& g, const ir::Node& mm, ir::ValueId b) {
  if (mm.inputs.size() != 2 || mm.outputs.size() != 1 || mm.inputs[0] == ir::kNoValue) return false;
  const ir::Value& a = g.value(mm.inputs[0]);
  const ir::Value& y = g.value(mm.outputs[0]);
  const Tensor* w = g.constant(mm.inputs[1]);
  const Tensor* bias = g.constant(b);
  if (!w || !bias || w->dims().size() != 2 || !float_type(w->dtype())) return false;
  if (a.dtype != w->dtype() || bias->dtype() != w->dtype() || !a.has_shape || a.dims.size() < 2) return false;
  const Dims& bd = bias->dims();
  if (bd.empty() || !y.has_shape || bd.size() > y.dims.size() || bd.back() != w->dims()[1]) return false;
  for (size_t i = 0; i + 1 < bd.size(); ++i)
    if (bd[i] != 1) return false;
  return true;
}

}  // namespace

size_t fuse_matmul_bias(ir::Graph& g) {
  size_t fused = 0;
  GraphIndex idx(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& add = g.nodes[i];
    if (idx.removed(i) || add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2 ||
        add.outputs.size() != 1)
      continue;
    for (int side = 0; side < 2; ++side) {
      const int mm = idx.producer_if(add.inputs[side], "MatMul");
      const ir::ValueId b = add.inputs[1 - side];
      if (mm < 0 || idx.single_consumer(add.inputs[side]) != static_cast<int>(i) || !fusable(g, g.nodes[mm], b))
        continue;
      ir::Node& n = g.nodes[mm];
      n.inputs.push_back(b);
      n.outputs = add.outputs;
      n.attrs[ops::kMatMulBiasAttr] = ir::Attribute::make_int(1);
      idx.remove(static_cast<int>(i));
      ++fused;
      break;
    }
  }
  idx.compact();
  return fused;
}

}  // namespace streamrt::builder
