// GPU tests of Rotary (kernels/rotary.cu; skip without a CUDA device): CUDA against the CPU in
// float32 / float16 / bfloat16, heads of 64 (eight elements a thread, 16-byte loads) and of 6 (one
// element a thread), cos / sin broadcast over batch and heads; a step of two rotations (a layer's Q
// and K: one launch when both take the 16-byte path, else one each).
#include <gtest/gtest.h>

#include "graph_check.h"

namespace streamrt {
namespace {

// Y = Rotary(X [2, 5, 4, d], cos [5, 1, d], sin [5, 1, d]).
ir::Graph rotary_graph(int64_t d) {
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {2, 5, 4, d}, true);
  auto c = g.add_value("cos", DataType::kFloat32, {5, 1, d}, true);
  auto s = g.add_value("sin", DataType::kFloat32, {5, 1, d}, true);
  auto y = g.add_value("y");
  g.inputs = {x, c, s};
  g.outputs = {y};
  ir::Node n = testing::graph_node("Rotary", {x, c, s}, {y});
  n.opset = 1;
  g.nodes = {n};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

// Y = Rotary(X [2, 5, 4, d], cos, sin) and Y2 = Rotary(X2 [2, 3, 5, d2], cos2 [1, 5, d2], sin2) in one
// step; `y_last` lists Y after Y2 among the outputs (check_cuda_against_cpu compares the last one).
ir::Graph paired_graph(int64_t d, int64_t d2, bool y_last) {
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {2, 5, 4, d}, true);
  auto c = g.add_value("cos", DataType::kFloat32, {5, 1, d}, true);
  auto s = g.add_value("sin", DataType::kFloat32, {5, 1, d}, true);
  auto x2 = g.add_value("x2", DataType::kFloat32, {2, 3, 5, d2}, true);
  auto c2 = g.add_value("cos2", DataType::kFloat32, {1, 5, d2}, true);
  auto s2 = g.add_value("sin2", DataType::kFloat32, {1, 5, d2}, true);
  auto y = g.add_value("y"), y2 = g.add_value("y2");
  g.inputs = {x, c, s, x2, c2, s2};
  g.outputs = y_last ? std::vector<ir::ValueId>{y2, y} : std::vector<ir::ValueId>{y, y2};
  ir::Node n = testing::graph_node("Rotary", {x, c, s, x2, c2, s2}, {y, y2});
  n.opset = 1;
  g.nodes = {n};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

TEST(GpuRotary, TwoRotationsInOneStepMatchTheCpu) {
  SRT_REQUIRE_GPU();
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16})
    for (auto [d, d2] : {std::pair<int64_t, int64_t>{64, 128}, {64, 6}})
      for (bool y_last : {false, true}) {
        const std::string what = std::string(dtype_name(precision)) + " head sizes " + std::to_string(d) + ", " +
                                 std::to_string(d2) + (y_last ? ", Y checked" : ", Y2 checked");
        plan::PlanData p = testing::check_cuda_against_cpu(paired_graph(d, d2, y_last), precision, what, 9);
        const ir::Node* step = testing::find_step(p, "Rotary");
        ASSERT_NE(step, nullptr) << what;
        EXPECT_EQ(step->outputs.size(), 2u) << what;
      }
}

TEST(GpuRotary, MatchesTheCpu) {
  SRT_REQUIRE_GPU();
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (int64_t d : {64, 6}) {
      const std::string what = std::string(dtype_name(precision)) + " head size " + std::to_string(d);
      plan::PlanData p = testing::check_cuda_against_cpu(rotary_graph(d), precision, what, 9);
      EXPECT_NE(testing::find_step(p, "Rotary"), nullptr) << what;
    }
}

}  // namespace
}  // namespace streamrt
