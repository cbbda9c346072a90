// GPU tests of FusedElementwise (kernels/fused_elementwise.cu; skip without a CUDA device): chains
// the builder fuses into one step run on CUDA and match the CPU's plan, in float32 / float16 /
// bfloat16, on the eight-lanes path (a Llama gate silu(a) * b, by the gate kernel; a program whose
// inputs stay alive across instructions and that reads scalar constants, in shared-memory register
// slots) and on the one-element path (sizes not a multiple of 8).
#include <gtest/gtest.h>

#include <cmath>

#include "graph_check.h"

namespace streamrt {
namespace {

using testing::graph_node;

// y = silu(a) * b as the exporters write it, Mul(Mul(a, Sigmoid(a)), b) (the gate kernel), or with
// every operand order swapped and b the graph's first input.
ir::Graph gate_graph(const Dims& dims, bool swapped) {
  ir::Graph g;
  auto a = g.add_value("a", DataType::kFloat32, dims, true), b = g.add_value("b", DataType::kFloat32, dims, true);
  auto s = g.add_value("s"), t = g.add_value("t"), y = g.add_value("y");
  g.inputs = swapped ? std::vector<ir::ValueId>{b, a} : std::vector<ir::ValueId>{a, b};
  g.outputs = {y};
  g.nodes = {graph_node("Sigmoid", {a}, {s}), graph_node("Mul", swapped ? std::vector{s, a} : std::vector{a, s}, {t}),
             graph_node("Mul", swapped ? std::vector{b, t} : std::vector{t, b}, {y})};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

// y = ((x0 + x1) * (x2 - x3)) / (exp(x4 * 0.5) + x0 * 0.5) + tanh(x1 * x2) (a denominator of at
// least 0.1, so float32 rounding stays near its own size): x0, x1, x2 stay alive while other values
// come and go, and 0.5 is a scalar input of the program (six inputs: the most a program takes).
ir::Graph wide_graph(const Dims& dims) {
  ir::Graph g;
  std::vector<ir::ValueId> x;
  for (const char* name : {"x0", "x1", "x2", "x3", "x4"}) x.push_back(g.add_value(name, DataType::kFloat32, dims, true));
  auto half = g.add_value("half");
  g.set_constant(half, Tensor::from_vector(DataType::kFloat32, {}, std::vector<float>{0.5f}));
  std::vector<ir::ValueId> t;
  for (const char* name : {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"}) t.push_back(g.add_value(name));
  auto y = g.add_value("y");
  g.inputs = x;
  g.outputs = {y};
  g.nodes = {graph_node("Add", {x[0], x[1]}, {t[0]}), graph_node("Sub", {x[2], x[3]}, {t[1]}),
             graph_node("Mul", {t[0], t[1]}, {t[2]}),  graph_node("Mul", {x[4], half}, {t[3]}),
             graph_node("Exp", {t[3]}, {t[4]}),        graph_node("Mul", {x[0], half}, {t[9]}),
             graph_node("Add", {t[4], t[9]}, {t[5]}),
             graph_node("Div", {t[2], t[5]}, {t[6]}),  graph_node("Mul", {x[1], x[2]}, {t[7]}),
             graph_node("Tanh", {t[7]}, {t[8]}),       graph_node("Add", {t[6], t[8]}, {y})};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

void check(const ir::Graph& g, DataType precision, const std::string& what) {
  const plan::PlanData p = testing::check_cuda_against_cpu(g, precision, what + " " + dtype_name(precision));
  int fused = 0, others = 0;
  for (const ir::Node& s : p.steps) (s.op_type == "FusedElementwise" ? fused : others) += s.op_type != "Cast";
  EXPECT_EQ(fused, 1) << what << ": the chain is not one fused step";
  EXPECT_EQ(others, 0) << what;
}

TEST(GpuFusedElementwise, MatchesTheCpuOnBothPaths) {
  SRT_REQUIRE_GPU();
  // 8-lane path (whole blocks of 512 runs; a block's second half partly there: 812 runs; an odd run
  // count), then single elements.
  const std::vector<Dims> shapes = {{64, 1024}, {7, 928}, {3, 8}, {3, 5}, {1, 7, 9}};
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (const Dims& d : shapes) {
      check(gate_graph(d, false), precision, "gate " + dims_to_string(d));
      check(gate_graph(d, true), precision, "swapped gate " + dims_to_string(d));
      check(wide_graph(d), precision, "wide " + dims_to_string(d));
    }
}

}  // namespace
}  // namespace streamrt
