// Fusion: X / Sqrt(ReduceMean(Pow(X, 2), last axis) + eps) [* W]  ->  RMSNormalization(X, W).
// Also matches X * Reciprocal(Sqrt(...)) and X * (1 / Sqrt(...)), the forms exporters emit
// for rsqrt. Intermediates must have no other consumer.
#include "builder/fusion.h"

namespace streamrt::builder {
namespace {

bool scalar_equals(const ir::Graph& g, ir::ValueId v, float want) {
  const Tensor* t = g.constant(v);
  if (!t || t->numel() != 1) return false;
  auto f = t->to_float_vector();
  return f.ok() && (*f)[0] == want;
}

std::optional<float> scalar(const ir::Graph& g, ir::ValueId v) {
  const Tensor* t = g.constant(v);
  if (!t || t->numel() != 1 || !is_float(t->dtype())) return std::nullopt;
  return t->to_float_vector().value()[0];
}

// ReduceMean over exactly the last axis with keepdims.
bool mean_over_last_axis(const ir::Graph& g, const ir::Node& n) {
  auto keep = n.attr_int("keepdims", 1);
  if (!keep.ok() || *keep != 1) return false;
  std::vector<int64_t> axes;
  if (n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue) {
    const Tensor* t = g.constant(n.inputs[1]);
    if (!t) return false;
    axes = t->to_int64_vector().value();
  } else {
    auto a = n.attr_ints("axes");
    if (!a.ok()) return false;
    axes = *a;
  }
  const int64_t rank = static_cast<int64_t>(g.value(n.inputs[0]).dims.size());
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// Cast(h -> float32) -> x ... normalized -> Cast(-> h), h float16 / bfloat16, where x feeds only
// the norm: (h, the output Cast's node); (kNoValue, -1) otherwise.
std::pair<ir::ValueId, int> half_precision_casts(const ir::Graph& g, const GraphIndex& idx, ir::ValueId x,
                                                 const ir::Node& out, std::vector<int> chain, int root) {
  const int cin = idx.producer_if(x, "Cast");
  const int cout = idx.single_consumer(out.outputs[0]);
  if (cin < 0 || cout < 0 || g.nodes[cout].op_type != "Cast" || g.value(x).dtype != DataType::kFloat32)
    return {ir::kNoValue, -1};
  const ir::ValueId h = g.nodes[cin].inputs[0];
  const DataType t = g.value(h).dtype;
  if ((t != DataType::kFloat16 && t != DataType::kBFloat16) || g.value(g.nodes[cout].outputs[0]).dtype != t)
    return {ir::kNoValue, -1};
  chain.push_back(cin);
  if (!idx.single_use_chain(chain, root)) return {ir::kNoValue, -1};
  return {h, cout};
}

}  // namespace

size_t fuse_rms_norm(ir::Graph& g) {
  size_t fused = 0;
  GraphIndex idx(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& out = g.nodes[i];  // the Div or Mul producing the normalized X
    if (idx.removed(i) || !(out.op_type == "Div" || out.op_type == "Mul") || out.inputs.size() != 2) continue;
    // Find X and the Sqrt node on the other side.
    for (int side = 0; side < 2; ++side) {
      ir::ValueId x = out.inputs[side], other = out.inputs[1 - side];
      int sqrt_node = -1;
      std::vector<int> chain;  // nodes to remove
      if (out.op_type == "Div" && side == 0) {
        sqrt_node = idx.producer_if(other, "Sqrt");
      } else if (out.op_type == "Mul") {
        int rec = idx.producer_if(other, "Reciprocal");
        int div = idx.producer_if(other, "Div");
        if (rec >= 0) {
          sqrt_node = idx.producer_if(g.nodes[rec].inputs[0], "Sqrt");
          chain.push_back(rec);
        } else if (div >= 0 && scalar_equals(g, g.nodes[div].inputs[0], 1.f)) {
          sqrt_node = idx.producer_if(g.nodes[div].inputs[1], "Sqrt");
          chain.push_back(div);
        }
      }
      if (sqrt_node < 0) continue;
      int add = idx.producer_if(g.nodes[sqrt_node].inputs[0], "Add");
      if (add < 0) continue;
      int mean = idx.producer_if(g.nodes[add].inputs[0], "ReduceMean");
      ir::ValueId eps_v = g.nodes[add].inputs[1];
      if (mean < 0) {
        mean = idx.producer_if(g.nodes[add].inputs[1], "ReduceMean");
        eps_v = g.nodes[add].inputs[0];
      }
      auto eps = scalar(g, eps_v);
      if (mean < 0 || !eps || !mean_over_last_axis(g, g.nodes[mean])) continue;
      int pow = idx.producer_if(g.nodes[mean].inputs[0], "Pow");
      int sq = idx.producer_if(g.nodes[mean].inputs[0], "Mul");
      bool squares_x = (pow >= 0 && g.nodes[pow].inputs[0] == x && scalar_equals(g, g.nodes[pow].inputs[1], 2.f)) ||
                       (sq >= 0 && g.nodes[sq].inputs[0] == x && g.nodes[sq].inputs[1] == x);
      if (!squares_x) continue;
      chain.insert(chain.end(), {sqrt_node, add, mean, pow >= 0 ? pow : sq});
      if (!idx.single_use_chain(chain, static_cast<int>(i))) continue;
      // Half-precision exports normalize in float32 between two Casts (transformers' RMSNorm:
      // x.to(float32) ... .to(input_dtype) * weight): the op takes the half tensor and keeps its
      // statistics in float32 itself, so both Casts go (one rounding instead of two).
      const auto [half_in, cast_out] = half_precision_casts(g, idx, x, out, chain, static_cast<int>(i));
      if (cast_out >= 0) {
        chain.push_back(idx.producer(x));
        x = half_in;
      }
      // Rewrite `out` in place as RMSNormalization(X); absorb a following Mul by a constant scale.
      ir::Node fused_node;
      fused_node.name = out.name + "/rms_norm";
      fused_node.op_type = "RMSNormalization";
      fused_node.opset = 23;
      fused_node.inputs = {x};
      fused_node.outputs = out.outputs;
      fused_node.attrs["axis"] = ir::Attribute::make_int(-1);
      fused_node.attrs["epsilon"] = ir::Attribute::make_float(*eps);
      if (cast_out >= 0) {
        fused_node.outputs = g.nodes[cast_out].outputs;
        idx.remove(cast_out);
      }
      int mul_w = idx.single_consumer(fused_node.outputs[0]);
      if (mul_w >= 0 && g.nodes[mul_w].op_type == "Mul") {
        const ir::Node& m = g.nodes[mul_w];
        ir::ValueId w = m.inputs[0] == fused_node.outputs[0] ? m.inputs[1] : m.inputs[0];
        const Tensor* wt = g.constant(w);
        const Dims& xd = g.value(x).dims;
        if (wt && wt->dims().size() == 1 && !xd.empty() && wt->dims()[0] == xd.back() &&
            wt->dtype() == g.value(x).dtype) {
          fused_node.inputs.push_back(w);
          fused_node.outputs = m.outputs;
          idx.remove(mul_w);
        }
      }
      for (int n : chain) idx.remove(n);
      out = std::move(fused_node);
      ++fused;
      break;
    }
  }
  idx.compact();
  return fused;
}

}  // namespace streamrt::builder
