#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

TEST(Variadic, ThreeInputsWithBroadcast) {
  // a [2,3], b [3], c [2,1] -> [2,3]; reference by a naive loop.
  const std::vector<float> a = {1, 9, 3, -4, 5, 6};
  const std::vector<float> b = {2, 2, 8};
  const std::vector<float> c = {0, 7};
  const std::vector<Tensor> in = {f32({2, 3}, a), f32({3}, b), f32({2, 1}, c)};
  std::vector<float> mx, mn, sm, mean;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float x = a[i * 3 + j], y = b[j], z = c[i];
      mx.push_back(std::max({x, y, z}));
      mn.push_back(std::min({x, y, z}));
      sm.push_back(x + y + z);
      mean.push_back((x + y + z) / 3);
    }
  auto check = [&](const char* op, const std::vector<float>& want) {
    auto out = run_ok(make_node(op, 3), in);
    EXPECT_EQ(out[0].dims(), (Dims{2, 3})) << op;
    expect_near_all(values_f32(out[0]), want, 1e-6f, 0);
  };
  check("Max", mx);
  check("Min", mn);
  check("Sum", sm);
  check("Mean", mean);
}

TEST(Variadic, OneInputIsCopy) {
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    auto out = run_ok(make_node(op, 1), {f32({3}, {1, -2, 3})});
    EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, -2, 3})) << op;
  }
}

TEST(Variadic, OutputLargerThanFirstInput) {
  auto out = run_ok(make_node("Sum", 2), {f32({1}, {1}), f32({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2, 3, 4, 5}));
}

TEST(Variadic, MaxMinIntegers) {
  auto out = run_ok(make_node("Max", 2), {i8({3}, {-128, 5, 127}), i8({3}, {0, -5, 126})});
  EXPECT_EQ(values_as<int8_t>(out[0]), (std::vector<int8_t>{0, 5, 127}));
  out = run_ok(make_node("Min", 2), {u8({3}, {0, 200, 255}), u8({1}, {100})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{0, 100, 100}));
  const int64_t big = std::numeric_limits<int64_t>::max();
  out = run_ok(make_node("Max", 2), {i64({2}, {big, big - 1}), i64({2}, {big - 1, big})});
  // Exact in int64 (a float accumulator would round these together).
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{big, big}));
  out = run_ok(make_node("Min", 2), {i32({2}, {3, -3}), i32({2}, {-4, 4})});
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{-4, -3}));
}

TEST(Variadic, HalfTypes) {
  auto out = run_ok(make_node("Max", 2), {f16({3}, {1.5f, -2, 0.25f}), f16({3}, {1, -1, 0.5f})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1.5f, -1, 0.5f}));
  out = run_ok(make_node("Mean", 2), {bf16({2}, {1, 2}), bf16({2}, {2, 5})});
  EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1.5f, 3.5f}));
  // Sum of halfs accumulates in float: 2048 + 1 + 1 is 2050, not 2048 twice rounded.
  out = run_ok(make_node("Sum", 3), {f16({1}, {2048}), f16({1}, {1}), f16({1}, {1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2050}));
}

TEST(Variadic, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* op : {"Max", "Min"}) {
    auto out = run_ok(make_node(op, 2), {f32({2}, {nan, 1}), f32({2}, {1, nan})});
    auto v = values_f32(out[0]);
    EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1])) << op;
  }
}

TEST(Variadic, Errors) {
  EXPECT_EQ(run_status(make_node("Max", 2), {f32({1}, {1}), i64({1}, {1})}).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(run_status(make_node("Sum", 2), {i64({1}, {1}), i64({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(make_node("Mean", 1), {i32({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(make_node("Min", 1), {boolean({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_FALSE(run_status(make_node("Max", 0), {}).ok());
  EXPECT_FALSE(run_status(make_node("Sum", 2), {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}).ok());
  EXPECT_FALSE(run_status(make_node("Sum", 2), {f32({2}, {1, 2}), Tensor()}).ok());
}

TEST(Variadic, InferDynamic) {
  auto r = infer_only(make_node("Max", 3), {info(DataType::kFloat32, {-1, 1}), info(DataType::kFloat32, {1, 4}),
                                            info(DataType::kFloat32, {4})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 4}));
  r = infer_only(make_node("Mean", 2), {info(DataType::kFloat16, {3}), unranked(DataType::kFloat16)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
}

}  // namespace
}  // namespace streamrt
