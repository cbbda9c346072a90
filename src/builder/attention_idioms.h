// Exporter idioms around scaled-dot-product attention that fuse_attention folds into the Attention
// op, so that transformers' exports (torch.onnx, both exporters) fuse as hand-written graphs do:
//   - the NaN guard torch writes after the softmax: Where(IsNaN(p), 0, p)       -> nan_to_zero
//   - K^T made through a flattened batch: Reshape(Transpose(Reshape(K, [-1, S, D]), [0, 2, 1]),
//     [..., D, S])                                                                -> K, untransposed
//   - grouped-query repeat_kv: Reshape(Expand(Unsqueeze(K, 2), [B, Hkv, G, S, D]), [B, Hkv * G, S, D])
//                                                                                 -> K, kv_group = G
// Each is taken only when DimTracer proves the shapes line up at every input shape.
#pragma once

#include <optional>
#include <vector>

#include "builder/dim_tracer.h"

namespace streamrt::builder {

// The Softmax node whose output `v` guards as Where(IsNaN(p), 0, p), with the IsNaN and Where
// nodes appended to `chain`; -1 (chain untouched) when `v` is not that.
int nan_guarded_softmax(const ir::Graph& g, const GraphIndex& idx, ir::ValueId v, std::vector<int>* chain);

// x when `v` is x with its last two axes swapped through a flattened batch (see above); the three
// nodes are appended to `chain`.
std::optional<ir::ValueId> flattened_transpose(const ir::Graph& g, const GraphIndex& idx, DimTracer& tr, ir::ValueId v,
                                               std::vector<int>* chain);

// K or V stored with fewer heads, and how many query heads share each.
struct RepeatedKv {
  ir::ValueId kv = ir::kNoValue;
  int64_t group = 1;
  std::vector<int> nodes;  // Unsqueeze, Expand, Reshape
};
std::optional<RepeatedKv> repeated_kv(const ir::Graph& g, const GraphIndex& idx, DimTracer& tr, ir::ValueId v);

}  // namespace streamrt::builder
