// ONNX ops that the standard defines as functions of other ops, which streamrt runs as that
// composition: the importer replaces each such node by the nodes of its body (opset 23's
// Attention with head counts, past key/value or is_causal; RotaryEmbedding). The builder's
// fusion passes then turn the parts it knows (MatMul-Softmax-MatMul, rotate-half) back into
// streamrt's fused ops. Each expansion lives in its own file here and registers itself:
//   STREAMRT_REGISTER_FUNCTION_OP(RotaryEmbedding, {.op_type = "RotaryEmbedding", .min_opset = 23,
//                                                  .applies = ..., .expand = ...});
// Adding one touches its own file and tests only.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op.h"

namespace streamrt::onnx_import {

// Writes the nodes that replace one node: new values are named "<node>/<n>", new nodes take the
// replaced node's domain opset, so opset-dependent forms (Slice / Unsqueeze inputs) are the new ones.
class GraphWriter {
 public:
  using Attrs = std::map<std::string, ir::Attribute>;
  GraphWriter(ir::Graph& g, const ir::Node& origin) : g_(g), origin_(origin) {}

  // Adds a node with one new output and returns it.
  ir::ValueId add(const std::string& op, std::vector<ir::ValueId> inputs, Attrs attrs = {});
  // Adds a node writing the given (existing) outputs.
  void add_to(const std::string& op, std::vector<ir::ValueId> inputs, std::vector<ir::ValueId> outputs,
              Attrs attrs = {});
  ir::ValueId ints(const std::vector<int64_t>& v);  // 1-D int64 constant
  ir::ValueId scalar_int(int64_t v);                // 0-D int64 constant
  // A 0-D constant of float type `t` (float32 / float16 / bfloat16 / float64), so that constant
  // folding and the fusion passes see a constant, not a cast of one.
  Result<ir::ValueId> scalar(float v, DataType t);

  std::vector<ir::Node> take() { return std::move(nodes_); }
  const ir::Node& origin() const { return origin_; }

 private:
  ir::ValueId fresh();
  ir::Graph& g_;
  const ir::Node& origin_;
  std::vector<ir::Node> nodes_;
  int next_ = 0;
};

inline ir::Attribute ints_attr(std::vector<int64_t> v) { return ir::Attribute::make_ints(std::move(v)); }
inline ir::Attribute int_attr(int64_t v) { return ir::Attribute::make_int(v); }

struct FunctionOp {
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int min_opset = 1;
  // Whether this node is the function form (e.g. ONNX Attention rather than streamrt's own).
  bool (*applies)(const ir::Node&) = nullptr;
  // Writes the body; `inputs` are what shape inference knows about the node's inputs (dtype,
  // rank, dims) in the graph so far. Errors name the node.
  Status (*expand)(GraphWriter&, std::span<const ops::TensorInfo> inputs) = nullptr;
};

class FunctionOpRegistry {
 public:
  static FunctionOpRegistry& global();
  void add(FunctionOp op) { ops_.push_back(std::move(op)); }
  const FunctionOp* find(const ir::Node& n) const;
  const std::vector<FunctionOp>& all() const { return ops_; }

 private:
  std::vector<FunctionOp> ops_;
};

struct FunctionOpRegistrar {
  explicit FunctionOpRegistrar(FunctionOp op) { FunctionOpRegistry::global().add(std::move(op)); }
};

// Replaces every node a registered expansion applies to by its body, in graph order (each node
// sees the shapes its inputs have once the nodes before it are expanded). The graph must be
// topologically sorted; it is re-sorted after. An input whose rank inference cannot reach (an
// unsupported op upstream) leaves the node in place, for the unsupported-op report.
Status expand_function_ops(ir::Graph& g);

}  // namespace streamrt::onnx_import

#define STREAMRT_REGISTER_FUNCTION_OP(id, ...) \
  static ::streamrt::onnx_import::FunctionOpRegistrar _srt_function_op_##id(::streamrt::onnx_import::FunctionOp __VA_ARGS__)
