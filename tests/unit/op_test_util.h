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

// Runs the node's CPU kernel; fails the test on error.
inline std::vector<Tensor> run_ok(const ir::Node& node, const std::vector<Tensor>& inputs) {
  auto r = ops::evaluate_on_host(node, inputs);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : std::vector<Tensor>{};
}

}  // namespace streamrt::testing
