// Compress: the slices (or flattened elements) whose condition entry is true; a data-dependent
// output size, also sized per run from a runtime condition through an engine.
#include <filesystem>

#include "engine_test_util.h"
#include "shape_ops_test_util.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {
using namespace testing;

Tensor cond(const std::vector<uint8_t>& v) {
  return Tensor::from_vector(DataType::kBool, {static_cast<int64_t>(v.size())}, v);
}

ir::Node compress_node(std::optional<int64_t> axis, int opset = 11) {
  std::map<std::string, ir::Attribute> attrs;
  if (axis) attrs["axis"] = ir::Attribute::make_int(*axis);
  return make_node("Compress", 2, 1, attrs, opset);
}

TEST(Compress, AlongAnAxisAndFlattened) {
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto out = run_ok(compress_node(0), {x, cond({0, 1, 1})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3, 4, 5, 6}));
  out = run_ok(compress_node(-1), {x, cond({1, 0})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 1}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 3, 5}));
  // No axis: the flattened input; a shorter condition drops the rest.
  out = run_ok(compress_node(std::nullopt), {x, cond({0, 1, 0, 0, 1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2, 5}));
  out = run_ok(compress_node(1), {i64({2, 3}, {1, 2, 3, 4, 5, 6}), cond({0, 0})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 0}));
}

TEST(Compress, Errors) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(run_status(compress_node(0), {x, cond({1, 1, 1})}).ok());             // longer than the axis
  EXPECT_FALSE(run_status(compress_node(2), {x, cond({1})}).ok());                   // axis out of range
  EXPECT_FALSE(run_status(compress_node(-1, 9), {x, cond({1})}).ok());               // negative axis before 11
  EXPECT_FALSE(run_status(compress_node(0), {x, i64({2}, {1, 0})}).ok());            // not bool
}

TEST(Compress, RuntimeConditionSizesTheOutputPerRun) {
  onnx::ModelProto m = make_model(11);
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{4}, int64_t{2}});
  add_input(g, "c", onnx::TensorProto_DataType_BOOL, {int64_t{4}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {std::string("n"), int64_t{2}});
  auto* n = add_node(g, "Compress", "compress", {"x", "c"}, {"y"});
  auto* a = n->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
  auto engine = cpu_engine_from_model(m);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_execution_context().value();
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7};
  for (const std::vector<uint8_t>& c : {std::vector<uint8_t>{1, 0, 0, 1}, std::vector<uint8_t>{1, 1, 1, 1},
                                        std::vector<uint8_t>{0, 0, 0, 0}}) {
    std::vector<float> y(8, -1.f), want;
    for (size_t i = 0; i < 4; ++i)
      if (c[i]) want.insert(want.end(), {x[2 * i], x[2 * i + 1]});
    ASSERT_TRUE(ctx->set_tensor_address("x", x.data(), x.size() * 4).ok());
    ASSERT_TRUE(ctx->set_tensor_address("c", const_cast<uint8_t*>(c.data()), c.size()).ok());
    ASSERT_TRUE(ctx->set_tensor_address("y", y.data(), y.size() * 4).ok());
    ASSERT_TRUE(ctx->execute().ok());
    EXPECT_EQ(ctx->tensor_shape("y").value(), (Dims{static_cast<int64_t>(want.size() / 2), 2}));
    EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + static_cast<long>(want.size())), want);
  }
}

}  // namespace
}  // namespace streamrt
