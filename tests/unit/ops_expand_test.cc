#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node expand_node() { return make_node("Expand", 2, 1, {}, 13); }

// Naive reference for a 2-D input [r, c] (r or c may be 1) expanded to 3-D `out`.
std::vector<float> expand_ref_2d(const std::vector<float>& x, int64_t r, int64_t c, const Dims& out) {
  std::vector<float> y;
  for (int64_t a = 0; a < out[0]; ++a)
    for (int64_t i = 0; i < out[1]; ++i)
      for (int64_t j = 0; j < out[2]; ++j) y.push_back(x[(r == 1 ? 0 : i) * c + (c == 1 ? 0 : j)]);
  return y;
}

TEST(Expand, AddsAxesAndBroadcastsOnes) {
  std::vector<float> x{1, 2, 3};
  auto out = run_ok(expand_node(), {f32({3, 1}, x), i64({3}, {2, 1, 6})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3, 6}));
  EXPECT_EQ(values_f32(out[0]), expand_ref_2d(x, 3, 1, {2, 3, 6}));
  out = run_ok(expand_node(), {f32({3, 1}, x), i64({2}, {3, 4})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 4}));
  EXPECT_EQ(values_f32(out[0]), expand_ref_2d(x, 3, 1, {1, 3, 4}));
  out = run_ok(expand_node(), {f32({1, 3}, x), i64({3}, {2, 2, 1})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2, 3}));
  EXPECT_EQ(values_f32(out[0]), expand_ref_2d(x, 1, 3, {2, 2, 3}));
}

TEST(Expand, ShapeSmallerThanInputKeepsInput) {
  // Bidirectional: shape [1] against [3, 1] leaves the input as it is.
  auto out = run_ok(expand_node(), {f32({3, 1}, {1, 2, 3}), i64({1}, {1})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 1}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 2, 3}));
  out = run_ok(expand_node(), {f32({1}, {5}), i64({2}, {2, 0})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 0}));
}

TEST(Expand, AllElementSizes) {
  auto out = run_ok(expand_node(), {i64({2}, {-1, 1LL << 40}), i64({2}, {2, 2})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-1, 1LL << 40, -1, 1LL << 40}));
  out = run_ok(expand_node(), {i32({1}, {9}), i64({1}, {3})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{9, 9, 9}));
  out = run_ok(expand_node(), {bf16({2, 1}, {1.5f, -2}), i64({2}, {2, 2})});
  EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1.5f, 1.5f, -2, -2}));
  out = run_ok(expand_node(), {Tensor::from_vector(DataType::kBool, {2}, std::vector<uint8_t>{1, 0}),
                               i64({2}, {2, 2})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1, 0, 1, 0}));
}

TEST(Expand, Infer) {
  Tensor shape = i64({3}, {2, 5, 4});
  auto r = infer_infos(expand_node(), {known(DataType::kFloat32, {-1, 1}), value_of(shape)});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{2, 5, 4}));
  // Shape value unknown, length known: dims > 1 of the input survive.
  r = infer_infos(expand_node(), {known(DataType::kFloat32, {3, 1}), known(DataType::kInt64, {3})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 3, -1}));
  r = infer_infos(expand_node(), {known(DataType::kFloat32, {3, 1}), known(DataType::kInt64, {-1})});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  r = infer_infos(expand_node(), {unranked(DataType::kInt32), value_of(shape)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dtype, DataType::kInt32);
  const auto* schema = ops::OpRegistry::global().find("Expand");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->shape_inputs, (std::vector<int>{1}));
}

TEST(Expand, Errors) {
  Status st = run_status(expand_node(), {f32({3}, {1, 2, 3}), i64({1}, {4})});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("broadcast"), std::string::npos) << st.message();
  EXPECT_FALSE(run_status(expand_node(), {f32({1}, {1}), i64({2}, {2, -3})}).ok());
  EXPECT_FALSE(run_status(expand_node(), {f32({1}, {1}), i32({1}, {2})}).ok());
  EXPECT_FALSE(run_status(expand_node(), {f32({1}, {1}), i64({1, 1}, {2})}).ok());
  EXPECT_FALSE(run_status(make_node("Expand", 1, 1, {}, 13), {f32({1}, {1})}).ok());
}

}  // namespace
}  // namespace streamrt
