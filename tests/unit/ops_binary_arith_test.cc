#include "op_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

TEST(BinaryArith, BroadcastsRowAgainstMatrix) {
  auto out = run_ok(make_node("Add", 2), {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(BinaryArith, BroadcastsBothSides) {
  auto out = run_ok(make_node("Mul", 2), {f32({2, 1}, {2, 3}), f32({1, 3}, {1, 10, 100})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2, 20, 200, 3, 30, 300}));
}

TEST(BinaryArith, IntegerDivisionTruncates) {
  auto out = run_ok(make_node("Div", 2), {i64({3}, {7, -7, 9}), i64({3}, {2, 2, 3})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{3, -3, 3}));
}

TEST(BinaryArith, PowMixedTypes) {
  auto out = run_ok(make_node("Pow", 2), {f32({3}, {2, 3, 4}), i64({1}, {2})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{4, 9, 16}));
}

TEST(BinaryArith, RejectsIncompatibleShapes) {
  auto r = ops::evaluate_on_host(make_node("Sub", 2), {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("do not broadcast"), std::string::npos);
}

TEST(BinaryArith, RejectsMixedTypes) {
  auto r = ops::evaluate_on_host(make_node("Add", 2), {f32({1}, {1}), i64({1}, {1})});
  EXPECT_FALSE(r.ok());
}

TEST(OpRegistry, NoDuplicateRegistrations) {
  EXPECT_TRUE(ops::OpRegistry::global().errors().empty());
  EXPECT_NE(ops::OpRegistry::global().find("Relu"), nullptr);
}

}  // namespace
}  // namespace streamrt
