// GPU test of the CUDA engine's load-time host fallback for data types (ctest label `gpu`; skips
// without a CUDA device): a step whose CUDA kernel does not list its type (float64 Relu, int16
// Neg: their kernels take neither) runs its CPU kernel on host copies, as a step with no CUDA
// kernel does, decided when the engine loads, instead of failing in the middle of the run; the
// steps around it stay on the device and the values cross between the two. The unit test
// tests/unit/op_properties_test.cc checks the decision itself without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "../unit/conv_test_util.h"
#include "gpu_test_util.h"

namespace streamrt {
namespace {

using testing::graph_node;

class GpuDtypeFallback : public ::testing::Test {
 protected:
  void SetUp() override { SRT_REQUIRE_GPU(); }
};

Result<Tensor> build_and_run(const ir::Graph& g, const Tensor& x) {
  SRT_ASSIGN_OR_RETURN(auto plan, testing::build_graph_plan(g, DeviceType::kCuda, true));
  return testing::run_graph_plan(DeviceType::kCuda, std::move(plan), {{"X", x}});
}

// X (float64) -> Relu (host: no float64 in its CUDA kernel) -> Cast to float32 (device) -> Neg
// (device, float32) -> Y.
TEST_F(GpuDtypeFallback, Float64ReluRunsOnTheHostBetweenDeviceSteps) {
  ir::Graph g;
  g.name = "float64_relu";
  const ir::ValueId x = g.add_value("X", DataType::kFloat64, {2, 3}, true);
  const ir::ValueId r = g.add_value("R"), c = g.add_value("C"), y = g.add_value("Y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(graph_node("Relu", {x}, {r}));
  ir::Node cast = graph_node("Cast", {r}, {c});
  cast.attrs["to"] = ir::Attribute::make_int(1);  // FLOAT
  g.nodes.push_back(std::move(cast));
  g.nodes.push_back(graph_node("Neg", {c}, {y}));
  ASSERT_TRUE(ir::infer_shapes(g).ok());

  const std::vector<double> in = {-1.5, 0.0, 2.25, -3.0, 4.5, 1e-300};
  auto got = build_and_run(g, Tensor::from_vector(DataType::kFloat64, {2, 3}, in));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->dtype(), DataType::kFloat32);
  ASSERT_EQ(got->numel(), 6);
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(got->data_as<float>()[i], -static_cast<float>(std::max(in[i], 0.0))) << "element " << i;
}

// X (int16) -> Neg (host: its CUDA kernel takes no int16) -> Y; Neg wraps INT16_MIN as the CPU
// kernel does.
TEST_F(GpuDtypeFallback, Int16NegRunsOnTheHost) {
  ir::Graph g;
  g.name = "int16_neg";
  const ir::ValueId x = g.add_value("X", DataType::kInt16, {6}, true);
  const ir::ValueId y = g.add_value("Y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(graph_node("Neg", {x}, {y}));
  ASSERT_TRUE(ir::infer_shapes(g).ok());

  const std::vector<int16_t> in = {-5, 0, 7, -32768, 32767, 3};
  const std::vector<int16_t> want = {5, 0, -7, -32768, -32767, -3};
  auto got = build_and_run(g, Tensor::from_vector(DataType::kInt16, {6}, in));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->dtype(), DataType::kInt16);
  ASSERT_EQ(got->numel(), 6);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got->data_as<int16_t>()[i], want[i]) << "element " << i;
}

}  // namespace
}  // namespace streamrt
