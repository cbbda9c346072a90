// Helpers for op unit tests: build a one-node graph and run it on the CPU reference kernel.
#pragma once

#include <gtest/gtest.h>

#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/op.h"

namespace streamrt::testing {

// A node with `num_inputs` inputs (ids 0..n-1) and `num_outputs` outputs, at `opset`.
inline ir::Node make_node(const std::string& op_type, size_t num_inputs, size_t num_outputs = 1,
                          std::map<std::string, ir::Attribute> attrs = {}, int opset = 17) {
  ir::Node n;
  n.name = op_type + "_0";
  n.op_type = op_type;
  n.opset = opset;
  for (size_t i = 0; i < num_inputs; ++i) n.inputs.push_back(static_cast<ir::ValueId>(i));
  for (size_t i = 0; i < num_outputs; ++i)
    n.outputs.push_back(static_cast<ir::ValueId>(num_inputs + i));
  n.attrs = std::move(attrs);
  return n;
}

inline Tensor f32(const Dims& dims, const std::vector<float>& v) {
  return Tensor::from_vector(DataType::kFloat32, dims, v);
}
inline Tensor i64(const Dims& dims, const std::vector<int64_t>& v) {
  return Tensor::from_vector(DataType::kInt64, dims, v);
}

inline std::vector<float> values_f32(const Tensor& t) { return t.to_float_vector().value(); }
inline std::vector<int64_t> values_i64(const Tensor& t) { return t.to_int64_vector().value(); }

// Appends node `op` (opset 17, named after its position) reading `in`, writing `out`.
inline void add_node(ir::Graph& g, const std::string& op, std::vector<ir::ValueId> in, std::vector<ir::ValueId> out,
                     std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = op + std::to_string(g.nodes.size());
  n.op_type = op;
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
}

// Appends node `op` reading `in` and returns its output, a new value.
inline ir::ValueId add_op(ir::Graph& g, const std::string& op, std::vector<ir::ValueId> in,
                          std::map<std::string, ir::Attribute> attrs = {}) {
  const ir::ValueId out = g.add_value(op + "_" + std::to_string(g.values.size()));
  add_node(g, op, std::move(in), {out}, std::move(attrs));
  return out;
}

// A new constant value holding `t`.
inline ir::ValueId add_constant(ir::Graph& g, Tensor t) {
  const ir::ValueId c = g.add_value("c" + std::to_string(g.values.size()));
  g.set_constant(c, std::move(t));
  return c;
}

// Runs the node's CPU kernel; fails the test on error.
inline std::vector<Tensor> run_ok(const ir::Node& node, const std::vector<Tensor>& inputs) {
  auto r = ops::evaluate_on_host(node, inputs);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : std::vector<Tensor>{};
}

// Runs a graph node by node on the CPU kernels (a reference for fusion tests), `xs` being its
// inputs in order; returns output 0, or an empty tensor after a node failed (the test has failed then).
inline Tensor interpret_graph(const ir::Graph& g, const std::vector<Tensor>& xs) {
  std::vector<Tensor> vals(g.values.size());
  for (size_t i = 0; i < xs.size() && i < g.inputs.size(); ++i) vals[g.inputs[i]] = xs[i];
  for (const auto& [id, t] : g.constants) vals[id] = t;
  for (const auto& n : g.nodes) {
    std::vector<Tensor> ins;
    for (auto v : n.inputs) ins.push_back(v == ir::kNoValue ? Tensor() : vals[v]);
    auto outs = run_ok(n, ins);
    if (outs.size() != n.outputs.size()) return Tensor();
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] != ir::kNoValue) vals[n.outputs[k]] = outs[k];
  }
  return vals[g.outputs[0]];
}
inline Tensor interpret_graph(const ir::Graph& g, const Tensor& x) { return interpret_graph(g, std::vector<Tensor>{x}); }

}  // namespace streamrt::testing
