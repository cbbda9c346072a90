#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node cumsum_node(int64_t exclusive, int64_t reverse, int opset = 14) {
  return make_node("CumSum", 2, 1,
                   {{"exclusive", ir::Attribute::make_int(exclusive)}, {"reverse", ir::Attribute::make_int(reverse)}},
                   opset);
}

// Reference on a [2, 3] matrix, written out element by element.
TEST(CumSum, OneDimAllFlagCombinations) {
  const Tensor x = f32({5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(values_f32(run_ok(cumsum_node(0, 0), {x, i64({}, {0})})[0]), (std::vector<float>{1, 3, 6, 10, 15}));
  EXPECT_EQ(values_f32(run_ok(cumsum_node(1, 0), {x, i64({}, {0})})[0]), (std::vector<float>{0, 1, 3, 6, 10}));
  EXPECT_EQ(values_f32(run_ok(cumsum_node(0, 1), {x, i64({}, {0})})[0]), (std::vector<float>{15, 14, 12, 9, 5}));
  EXPECT_EQ(values_f32(run_ok(cumsum_node(1, 1), {x, i32({}, {-1})})[0]), (std::vector<float>{14, 12, 9, 5, 0}));
}

TEST(CumSum, AxesOf2D) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_f32(run_ok(cumsum_node(0, 0, 11), {x, i64({}, {0})})[0]), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(values_f32(run_ok(cumsum_node(0, 0, 11), {x, i64({}, {1})})[0]), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values_f32(run_ok(cumsum_node(0, 0), {x, i64({1}, {-1})})[0]), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values_f32(run_ok(cumsum_node(1, 1), {x, i64({}, {-2})})[0]), (std::vector<float>{4, 5, 6, 0, 0, 0}));
}

TEST(CumSum, IntegersWrapAndHalfTypes) {
  const int32_t big = std::numeric_limits<int32_t>::max();
  auto out = run_ok(cumsum_node(0, 0), {i32({3}, {big, 1, 5}), i64({}, {0})});
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{big, std::numeric_limits<int32_t>::min(),
                                                               std::numeric_limits<int32_t>::min() + 5}));
  // A causal mask builder: cumsum of ones over the last axis of an int64 mask.
  out = run_ok(cumsum_node(0, 0), {i64({2, 4}, {1, 1, 1, 0, 0, 1, 1, 1}), i64({}, {1})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1, 2, 3, 3, 0, 1, 2, 3}));
  out = run_ok(cumsum_node(0, 1), {f16({4}, {0.5f, 0.25f, 1.f, 2.f}), i64({}, {0})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3.75f, 3.25f, 3.f, 2.f}));
}

TEST(CumSum, BadAxis) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run_status(cumsum_node(0, 0), {x, i64({}, {2})}).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(run_status(cumsum_node(0, 0), {x, i64({}, {-3})}).code(), StatusCode::kInvalidModel);
  EXPECT_FALSE(run_status(cumsum_node(0, 0), {x, i64({2}, {0, 1})}).ok());
  EXPECT_FALSE(run_status(cumsum_node(0, 0), {x, f32({}, {0})}).ok());
  EXPECT_FALSE(run_status(cumsum_node(0, 0), {f32({}, {1}), i64({}, {0})}).ok());
  // Axis unknown at build time: the output keeps x's shape.
  auto infos = infer_only(cumsum_node(0, 0), {info(DataType::kFloat32, {-1, 3}), info(DataType::kInt64, {})});
  ASSERT_TRUE(infos.ok());
  EXPECT_EQ((*infos)[0].dims, (Dims{-1, 3}));
}

}  // namespace
}  // namespace streamrt
