// Fusion: Add(MatMul(A, W), R) (either Add operand order) -> MatMul(A, W, [bias], R) with
// "__residual" = 1 (ops/matmul.h): a transformer's skip connection, x + proj(h), added by the GEMM
// as its C operand (cuBLASLt's beta = 1, the GEMV's epilogue) instead of a separate element-wise
// pass that reads the product and R again and writes the sum.
//
// Only where nothing else can tell the difference: W a 2-D float constant (one GEMM, no split),
// R of the product's type and exactly its dims (the Add neither broadcasts nor changes the shape),
// the product read by the Add alone (no graph output), and no residual yet. The fused node takes
// the Add's place in the order: R may be computed after the MatMul (every other input of the
// MatMul is there before it). It runs late (builder.cc): precision conversion, weight
// quantization and weight splitting see plain MatMuls.
#include "builder/fusion.h"
#include "ops/matmul.h"

namespace streamrt::builder {
namespace {

// True when `r` can be MatMul `mm`'s fused residual.
bool fusable(const ir::Graph& g, const ir::Node& mm, ir::ValueId r) {
  if (mm.op_type != "MatMul" || !mm.domain.empty() || mm.outputs.size() != 1 || mm.inputs.size() < 2 ||
      mm.inputs.size() > 3 || mm.inputs[0] == ir::kNoValue || ops::matmul_has_residual_attr(mm))
    return false;
  const Tensor* w = g.constant(mm.inputs[1]);
  const ir::Value& y = g.value(mm.outputs[0]);
  const ir::Value& rv = g.value(r);
  if (!w || w->dims().size() != 2 || !is_float(w->dtype()) || r == mm.outputs[0]) return false;
  return y.has_shape && rv.has_shape && y.dtype == w->dtype() && rv.dtype == y.dtype && rv.dims == y.dims &&
         y.dims.size() >= 2;
}

}  // namespace

size_t fuse_matmul_residual(ir::Graph& g) {
  GraphIndex idx(g);
  return fuse_adds(g, idx, [&](int add, int side) {
    const ir::ValueId product = g.nodes[add].inputs[side], r = g.nodes[add].inputs[1 - side];
    const int mm = idx.producer_if(product, "MatMul");
    if (mm < 0 || idx.single_consumer(product) != add || !fusable(g, g.nodes[mm], r)) return -1;
    ir::Node n = g.nodes[mm];
    n.inputs.resize(ops::kMatMulResidualInput, ir::kNoValue);  // no bias: an absent input 2
    n.inputs.push_back(r);
    n.attrs[ops::kMatMulResidualAttr] = ir::Attribute::make_int(1);
    n.outputs = g.nodes[add].outputs;
    g.nodes[add] = std::move(n);  // in the Add's place, after whatever computes R
    return mm;
  });
}

}  // namespace streamrt::builder
