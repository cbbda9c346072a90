#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node constant_node(std::map<std::string, ir::Attribute> attrs) { return make_node("Constant", 0, 1, std::move(attrs)); }

TEST(ConstantOp, TensorValueEveryDtype) {
  for (DataType dt : kAllDTypes) {
    Tensor v = pattern(dt, {2, 3});
    auto out = run_ok(constant_node({{"value", ir::Attribute::make_tensor(v)}}), {});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
    expect_picked(out[0], v, iota_map(6));
  }
}

TEST(ConstantOp, ScalarAndListAttributes) {
  auto out = run_ok(constant_node({{"value_float", ir::Attribute::make_float(2.5f)}}), {});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
  EXPECT_EQ(out[0].dims(), Dims{});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2.5f}));
  out = run_ok(constant_node({{"value_floats", ir::Attribute::make_floats({1.f, -2.f, 3.5f})}}), {});
  EXPECT_EQ(out[0].dims(), (Dims{3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1.f, -2.f, 3.5f}));
  out = run_ok(constant_node({{"value_int", ai(-7)}}), {});
  EXPECT_EQ(out[0].dtype(), DataType::kInt64);
  EXPECT_EQ(out[0].dims(), Dims{});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-7}));
  out = run_ok(constant_node({{"value_ints", ais({4, 5})}}), {});
  EXPECT_EQ(out[0].dims(), (Dims{2}));
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{4, 5}));
  out = run_ok(constant_node({{"value_ints", ais({})}}), {});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
}

TEST(ConstantOp, InferPublishesValue) {
  auto r = infer(constant_node({{"value_ints", ais({1, -1})}}), {});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dtype, DataType::kInt64);
  EXPECT_EQ(r.outs[0].dims, (Dims{2}));
  ASSERT_TRUE(r.values[0].has_value());
  EXPECT_EQ(values_i64(*r.values[0]), (std::vector<int64_t>{1, -1}));
  Tensor v = pattern(DataType::kFloat16, {4});
  r = infer(constant_node({{"value", ir::Attribute::make_tensor(v)}}), {});
  ASSERT_TRUE(r.values[0].has_value());
  EXPECT_EQ(r.outs[0].dtype, DataType::kFloat16);
  expect_picked(*r.values[0], v, iota_map(4));
}

TEST(ConstantOp, Errors) {
  EXPECT_FALSE(run_status(constant_node({}), {}).ok());
  EXPECT_FALSE(run_status(constant_node({{"value_int", ai(1)}, {"value_ints", ais({1})}}), {}).ok());
  Status st = run_status(constant_node({{"value_string", ir::Attribute::make_string("x")}}), {});
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_FALSE(run_status(constant_node({{"value", ai(3)}}), {}).ok());  // wrong kind
}

}  // namespace
}  // namespace streamrt
