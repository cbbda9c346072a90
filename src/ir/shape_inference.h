// Shape and type inference over an ir::Graph, driven by each op's infer() rule.
// Values of small tensors (shape tensors) are propagated by running CPU kernels, so that
// Reshape / Expand / Slice targets computed from Shape(...) are known when shapes are static.
// With dynamic dims, the elements that are known still travel (ops::PartialInts), so that
// Reshape(x, Concat(Unsqueeze(seq), [8], [64])) knows its last two dims and Gather(Shape(y), -1)
// of a static last dim becomes a known value.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ops/op.h"

namespace streamrt::ir {

struct InferOptions {
  // Propagate values of non-constant tensors up to this many elements (0 disables).
  int64_t max_propagated_elements = 1 << 12;
  // ...computed from inputs of at most this many elements each: shape computations read small
  // tensors, and a shape pass must never run a layer over its weights (which, with weight
  // streaming, would also page every weight in).
  int64_t max_propagated_input_elements = 1 << 16;
  // Input dims to use instead of the graph's declared ones (e.g. a profile's max shapes).
  std::unordered_map<ValueId, Dims> input_dims;
  // Contents known for some inputs (e.g. host data bound to a shape-tensor input).
  std::unordered_map<ValueId, Tensor> known_values;
  // Called before each node's shape rule with the node's index and inputs; an error stops the
  // pass (plan verification runs the ops' verify hooks here).
  std::function<Status(size_t node_index, const ops::InferContext&)> before_node;
  // Inputs and outputs of static dims holding more elements than this (or so many that the count
  // overflows) are an error naming the tensor (and its node): later rules and passes count
  // elements in int64 and size buffers from them. The builder passes its max_tensor_elements.
  int64_t max_tensor_elements = INT64_MAX;
};

struct InferResult {
  std::vector<ops::TensorInfo> infos;          // per ValueId
  std::vector<std::optional<Tensor>> values;  // known contents per ValueId
  // Elements known one by one for small int tensors whose contents are not known as a whole.
  std::vector<std::optional<ops::PartialInts>> partials;
};

// Infers every node's outputs in order (graph must be topologically sorted) and writes the
// result back into graph.values (dtype, dims, has_shape). Errors name the node.
Result<InferResult> infer_shapes(Graph& graph, const InferOptions& options = {});

// Same inference without touching the graph.
Result<InferResult> infer_shapes_readonly(const Graph& graph, const InferOptions& options = {});

// Lists every node whose op has no schema, or whose opset is older than the schema's
// min_opset: "Foo (node 'n1'), Add (node 'n7', opset 6 < 7)". Empty if none. With
// `missing_ops` false only the second kind is listed.
std::string unsupported_ops(const Graph& graph, bool missing_ops = true);

}  // namespace streamrt::ir
