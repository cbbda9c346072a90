// GPU tests of Rotary (kernels/rotary.cu; skip without a CUDA device): CUDA against the CPU in
// float32 / float16 / bfloat16, heads of 64 (eight elements a thread, 16-byte loads) and of 6 (one
// element a thread), cos / sin broadcast over batch and heads.
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
