#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node cos_node(std::optional<Tensor> value = std::nullopt) {
  std::map<std::string, ir::Attribute> attrs;
  if (value) attrs["value"] = ir::Attribute::make_tensor(*value);
  return make_node("ConstantOfShape", 1, 1, attrs, 9);
}

TEST(ConstantOfShape, DefaultIsFloatZero) {
  auto out = run_ok(cos_node(), {i64({2}, {2, 3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_f32(out[0]), std::vector<float>(6, 0.f));
}

TEST(ConstantOfShape, ValueAttributeGivesTypeAndFill) {
  auto out = run_ok(cos_node(f32({1}, {1.f})), {i64({3}, {4, 3, 2})});
  EXPECT_EQ(out[0].dims(), (Dims{4, 3, 2}));
  EXPECT_EQ(values_f32(out[0]), std::vector<float>(24, 1.f));
  out = run_ok(cos_node(i32({1}, {-7})), {i64({2}, {10, 6})});
  EXPECT_EQ(out[0].dtype(), DataType::kInt32);
  EXPECT_EQ(values_i64(out[0]), std::vector<int64_t>(60, -7));
  out = run_ok(cos_node(i64({}, {1LL << 40})), {i64({1}, {2})});
  EXPECT_EQ(values_i64(out[0]), std::vector<int64_t>(2, 1LL << 40));
  out = run_ok(cos_node(f16({1}, {0.5f})), {i64({1}, {3})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), std::vector<float>(3, 0.5f));
}

TEST(ConstantOfShape, ZeroDimsAndScalar) {
  auto out = run_ok(cos_node(i32({1}, {0})), {i64({1}, {0})});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
  out = run_ok(cos_node(f32({1}, {2.f})), {empty_of(DataType::kInt64, {0})});
  EXPECT_EQ(out[0].dims(), Dims{});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2.f}));
}

TEST(ConstantOfShape, InferWithUnknownShapeValue) {
  auto r = infer_infos(cos_node(i64({1}, {1})), {known(DataType::kInt64, {3})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, -1, -1}));
  EXPECT_EQ((*r)[0].dtype, DataType::kInt64);
  r = infer_infos(cos_node(), {known(DataType::kInt64, {-1})});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  r = infer_infos(cos_node(), {unranked(DataType::kInt64)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat32);
  Tensor shape = i64({2}, {5, 1});
  r = infer_infos(cos_node(), {value_of(shape)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{5, 1}));
}

TEST(ConstantOfShape, Errors) {
  EXPECT_FALSE(run_status(cos_node(), {i64({2}, {2, -1})}).ok());
  EXPECT_FALSE(run_status(cos_node(f32({2}, {1, 2})), {i64({1}, {2})}).ok());
  EXPECT_FALSE(run_status(cos_node(), {i32({1}, {2})}).ok());
  EXPECT_FALSE(run_status(cos_node(), {i64({1, 1}, {2})}).ok());
  EXPECT_FALSE(run_status(cos_node(), {f32({1}, {2})}).ok());
  auto bad_kind = make_node("ConstantOfShape", 1, 1, {{"value", attr_f(1.f)}}, 9);
  EXPECT_FALSE(run_status(bad_kind, {i64({1}, {2})}).ok());
}

}  // namespace
}  // namespace streamrt
