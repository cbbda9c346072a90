// --fp16 saturates float32 constants beyond float16's range at +-65504 instead of turning them into
// +-inf: an exporter's attention mask of float32's lowest value added to a fully masked row must
// give the uniform softmax row float32 gives, not NaN.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "engine_test_util.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

std::vector<float> run_masked_softmax(DataType precision) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  constexpr int kF32 = onnx::TensorProto_DataType_FLOAT;
  add_input(g, "x", kF32, {int64_t{1}, int64_t{4}});
  add_output(g, "y", kF32, {int64_t{1}, int64_t{4}});
  const float lowest = std::numeric_limits<float>::lowest();
  *g->add_initializer() = f32_raw("mask", {1, 4}, {lowest, lowest, lowest, lowest});
  add_node(g, "Add", "add", {"x", "mask"}, {"scores"});
  add_node(g, "Softmax", "softmax", {"scores"}, {"y"});
  BuilderConfig config;
  config.float_precision = precision;
  auto engine = cpu_engine_from_model(m, config);
  if (!engine) return {};
  auto ctx = engine->create_execution_context().value();
  std::vector<float> x = {0.5f, -0.25f, 0.125f, 1.f}, y(4, -1.f);
  EXPECT_TRUE(ctx->set_tensor_address("x", x.data(), 16).ok());
  EXPECT_TRUE(ctx->set_tensor_address("y", y.data(), 16).ok());
  EXPECT_TRUE(ctx->execute().ok());
  return y;
}

TEST(PrecisionSaturation, LowestFloatMaskGivesUniformRowInEveryPrecision) {
  for (DataType p : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const std::vector<float> y = run_masked_softmax(p);
    ASSERT_EQ(y.size(), 4u) << dtype_name(p);
    for (float v : y) EXPECT_NEAR(v, 0.25f, 1e-3f) << dtype_name(p);
  }
}

}  // namespace
}  // namespace streamrt
