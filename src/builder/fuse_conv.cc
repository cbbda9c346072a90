// Fusion: what directly follows a float Conv becomes its epilogue (ops/conv.h), so the
// convolution's output is written once instead of being read back by an Add and a Relu:
//   Relu(Conv(X, W[, B]))                  -> Conv(X, W, B)            __activation = Relu
//   Add(Conv(X, W[, B]), R), either order  -> Conv(X, W, B|none, R)    __residual = 1
//   Relu(Add(Conv(...), R))                -> both of the above.
// R must have exactly Y's dtype and dims (no broadcasting). Each absorbed intermediate must have
// no other reader and not be a graph output. The fused node takes the place of the last node it
// absorbs, where every one of its inputs (R included) is already computed.
// BuilderConfig::passes.conv_fusion off skips the pass (diagnostics: compare with the unfused graph).
#include <string>
#include <vector>

#include "builder/fusion.h"
#include "ops/conv.h"

namespace streamrt::builder {
namespace {

bool is_op(const ir::Node& n, const char* op, size_t inputs) {
  return n.op_type == op && n.domain.empty() && n.inputs.size() == inputs && n.outputs.size() == 1 &&
         n.outputs[0] != ir::kNoValue;
}

// The unique reader of `v` if it is a plain `op` node with `inputs` inputs, else -1.
int reader_if(const ir::Graph& g, const GraphIndex& idx, ir::ValueId v, const char* op, size_t inputs) {
  const int c = idx.single_consumer(v);
  return c >= 0 && is_op(g.nodes[c], op, inputs) ? c : -1;
}

// Same dtype and the same dims, where an unknown dim (-1) only matches an unknown one: the
// kernels check the actual dims again at run time.
bool same_shape(const ir::Value& a, const ir::Value& b) {
  return a.has_shape && b.has_shape && a.dtype == b.dtype && a.dims == b.dims;
}

// A float ONNX Conv with no epilogue yet.
bool fusable_conv(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type != "Conv" || !n.domain.empty() || n.inputs.size() < 2 || n.inputs.size() > 3 ||
      n.outputs.size() != 1 || n.outputs[0] == ir::kNoValue)
    return false;
  if (n.has_attr(ops::kConvResidualAttr) || n.has_attr(ops::kConvActivationAttr)) return false;
  const ir::Value& y = g.value(n.outputs[0]);
  return is_float(y.dtype) && y.has_shape;
}

}  // namespace

size_t fuse_conv(ir::Graph& g) {
  GraphIndex idx(g);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (idx.removed(i) || !fusable_conv(g, g.nodes[i])) continue;
    ir::Node conv = g.nodes[i];
    const ir::ValueId y = conv.outputs[0];
    std::vector<int> absorbed;  // in order; the fused node takes the last one's place
    ir::ValueId out = y;
    if (int add = reader_if(g, idx, y, "Add", 2); add >= 0) {
      const ir::Node& a = g.nodes[add];
      const ir::ValueId r = a.inputs[0] == y ? a.inputs[1] : a.inputs[0];
      if (r != ir::kNoValue && r != y && same_shape(g.value(r), g.value(y)) &&
          same_shape(g.value(a.outputs[0]), g.value(y))) {
        conv.inputs.resize(ops::kConvResidualInput, ir::kNoValue);  // an omitted bias stays omitted
        conv.inputs.push_back(r);
        conv.attrs[ops::kConvResidualAttr] = ir::Attribute::make_int(1);
        absorbed.push_back(add);
        out = a.outputs[0];
      }
    }
    if (int relu = reader_if(g, idx, out, "Relu", 1); relu >= 0 && same_shape(g.value(g.nodes[relu].outputs[0]),
                                                                                 g.value(y))) {
      conv.attrs[ops::kConvActivationAttr] = ir::Attribute::make_string("Relu");
      absorbed.push_back(relu);
      out = g.nodes[relu].outputs[0];
    }
    if (absorbed.empty()) continue;
    conv.outputs = {out};
    idx.remove(static_cast<int>(i));
    for (size_t k = 0; k + 1 < absorbed.size(); ++k) idx.remove(absorbed[k]);
    g.nodes[absorbed.back()] = std::move(conv);
    ++fused;
  }
  idx.compact();
  return fused;
}

}  // namespace streamrt::builder
