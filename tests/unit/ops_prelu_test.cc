#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

TEST(PRelu, SameShapeSlope) {
  for (int opset : {7, 9, 16}) {
    auto out = run_ok(make_node("PRelu", 2, 1, {}, opset),
                      {f32({2, 2}, {-2.f, 3.f, -0.5f, 0.f}), f32({2, 2}, {0.1f, 0.2f, 4.f, 5.f})});
    EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
    expect_near_all(values_f32(out[0]), {-0.2f, 3.f, -2.f, 0.f}, 1e-7f, 0.f);
  }
}

TEST(PRelu, SlopeBroadcastsToX) {
  // Per-channel slope [C, 1, 1] on [N, C, H, W] and a trailing [W] slope.
  std::vector<float> x(2 * 3 * 2 * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 3 == 0) ? 1.f + i : -1.f - i;
  const std::vector<float> slope = {0.5f, 2.f, -1.f};
  auto out = run_ok(make_node("PRelu", 2, 1, {}, 9), {f32({2, 3, 2, 2}, x), f32({3, 1, 1}, slope)});
  ASSERT_EQ(out[0].dims(), (Dims{2, 3, 2, 2}));
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] < 0 ? slope[(i / 4) % 3] * x[i] : x[i];
  EXPECT_EQ(values_f32(out[0]), want);
  out = run_ok(make_node("PRelu", 2, 1, {}, 16), {f32({2, 3, 2, 2}, x), f32({2}, {10.f, 100.f})});
  for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] < 0 ? (i % 2 ? 100.f : 10.f) * x[i] : x[i];
  EXPECT_EQ(values_f32(out[0]), want);
}

TEST(PRelu, IntegersAndHalfTypes) {
  auto out = run_ok(make_node("PRelu", 2, 1, {}, 9), {i32({4}, {-3, 4, -5, 0}), i32({1}, {3})});
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{-9, 4, -15, 0}));
  const int64_t lo = std::numeric_limits<int64_t>::min();
  out = run_ok(make_node("PRelu", 2, 1, {}, 9), {i64({2}, {lo, -2}), i64({2}, {-1, 2})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{lo, -4}));  // -1 * INT64_MIN wraps to itself
  out = run_ok(make_node("PRelu", 2, 1, {}, 16), {bf16({3}, {-2.f, 2.f, -8.f}), bf16({1}, {0.25f})});
  EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-0.5f, 2.f, -2.f}));
}

TEST(PRelu, SlopeMustNotWidenX) {
  // Multidirectional broadcasting would give [2, 3]; PRelu's output is X's shape, so refuse.
  EXPECT_FALSE(run_status(make_node("PRelu", 2, 1, {}, 9), {f32({3}, {1, 2, 3}), f32({2, 1}, {1, 2})}).ok());
  EXPECT_FALSE(run_status(make_node("PRelu", 2, 1, {}, 9), {f32({3}, {1, 2, 3}), f32({2}, {1, 2})}).ok());
  EXPECT_FALSE(run_status(make_node("PRelu", 2, 1, {}, 9), {f32({1}, {1}), i64({1}, {1})}).ok());
  auto infos = infer_only(make_node("PRelu", 2, 1, {}, 9),
                          {info(DataType::kFloat32, {-1, 4, 5}), info(DataType::kFloat32, {4, 1})});
  ASSERT_TRUE(infos.ok());
  EXPECT_EQ((*infos)[0].dims, (Dims{-1, 4, 5}));
}

}  // namespace
}  // namespace streamrt
