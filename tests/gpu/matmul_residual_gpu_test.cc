// GPU tests of MatMul's fused residual (ops/matmul.h, kernels/gemm.cu; skip without a CUDA device):
// y = A @ W (+ b) + R built for CUDA (one row: the half GEMV's epilogue in float16 / bfloat16;
// more rows: cuBLASLt's C operand with beta 1, with and without the bias epilogue) against the
// CPU plan, in float32 / float16 / bfloat16; the plan's MatMul carries the residual.
#include <gtest/gtest.h>

#include "graph_check.h"
#include "ops/matmul.h"

namespace streamrt {
namespace {

using testing::graph_node;

// y = Add(MatMul(a [m, 64], W [64, 40]) (+ b), r [m, 40]).
ir::Graph residual_graph(int64_t m, bool bias) {
  ir::Graph g;
  auto a = g.add_value("a", DataType::kFloat32, {m, 64}, true);
  auto r = g.add_value("r", DataType::kFloat32, {m, 40}, true);
  auto w = g.add_value("w", DataType::kFloat32, {64, 40}, true);
  g.set_constant(w, testing::random_tensor(DataType::kFloat32, {64, 40}, 3, 0.125f));
  auto h = g.add_value("h"), y = g.add_value("y");
  g.inputs = {a, r};
  g.outputs = {y};
  g.nodes = {graph_node("MatMul", {a, w}, {h})};
  if (bias) {
    auto b = g.add_value("b", DataType::kFloat32, {40}, true);
    g.set_constant(b, testing::random_tensor(DataType::kFloat32, {40}, 4));
    auto hb = g.add_value("hb");
    g.nodes.push_back(graph_node("Add", {h, b}, {hb}));
    h = hb;
  }
  g.nodes.push_back(graph_node("Add", {r, h}, {y}));
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

TEST(GpuMatMulResidual, MatchesTheCpu) {
  SRT_REQUIRE_GPU();
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (int64_t m : {1, 6})
      for (bool bias : {false, true}) {
        const std::string what = std::string(dtype_name(precision)) + " rows " + std::to_string(m) +
                                 (bias ? " bias" : "");
        plan::PlanData p = testing::check_cuda_against_cpu(residual_graph(m, bias), precision, what, 7);
        const ir::Node* mm = testing::find_step(p, "MatMul");
        ASSERT_NE(mm, nullptr) << what;
        EXPECT_TRUE(ops::matmul_has_residual_attr(*mm)) << what;
        EXPECT_EQ(testing::find_step(p, "Add"), nullptr) << what;
      }
}

}  // namespace
}  // namespace streamrt
