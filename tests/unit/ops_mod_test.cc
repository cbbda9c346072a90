#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node mod_node(int64_t fmod, int opset = 13) {
  return make_node("Mod", 2, 1, {{"fmod", ir::Attribute::make_int(fmod)}}, opset);
}

// Independent references in double: floored (Python) and truncated (C) remainders.
double floored(double a, double b) { return b == 0 ? 0 : a - std::floor(a / b) * b; }
double truncated(double a, double b) { return b == 0 ? 0 : a - std::trunc(a / b) * b; }

const std::vector<int64_t> kA = {-4, 7, 5, 4, -7, 8, 0, -9, 13};
const std::vector<int64_t> kB = {2, -3, 8, -2, 3, 5, 4, -4, 0};

TEST(Mod, IntegersFollowDivisorSignWithoutFmod) {
  for (int opset : {10, 13}) {
    auto out = run_ok(mod_node(0, opset), {i64({9}, kA), i64({9}, kB)});
    std::vector<int64_t> want;
    for (size_t i = 0; i < kA.size(); ++i) want.push_back(static_cast<int64_t>(floored(kA[i], kB[i])));
    EXPECT_EQ(values_i64(out[0]), want);
    EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{0, -2, 5, 0, 2, 3, 0, -1, 0}));
  }
}

TEST(Mod, IntegersFollowDividendSignWithFmod) {
  std::vector<int32_t> a(kA.begin(), kA.end()), b(kB.begin(), kB.end());
  auto out = run_ok(mod_node(1), {i32({9}, a), i32({9}, b)});
  std::vector<int32_t> want;
  for (size_t i = 0; i < a.size(); ++i) want.push_back(static_cast<int32_t>(truncated(a[i], b[i])));
  EXPECT_EQ(values_as<int32_t>(out[0]), want);
}

TEST(Mod, NarrowAndExtremeIntegers) {
  auto out = run_ok(mod_node(0), {i8({4}, {-128, -128, 127, -5}), i8({4}, {-1, 3, -128, 127})});
  // -128 mod 3 = 1 (floored); 127 mod -128 = -1; -5 mod 127 = 122.
  EXPECT_EQ(values_as<int8_t>(out[0]), (std::vector<int8_t>{0, 1, -1, 122}));
  const int64_t lo = std::numeric_limits<int64_t>::min();
  out = run_ok(mod_node(1), {i64({2}, {lo, lo}), i64({2}, {-1, 7})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{0, static_cast<int64_t>(lo % 7)}));
  out = run_ok(mod_node(0), {u8({3}, {200, 7, 9}), u8({3}, {7, 0, 10})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{4, 0, 9}));
}

TEST(Mod, FloatsBothModes) {
  const std::vector<float> a = {-4.3f, 7.2f, 5.f, 4.3f, -7.2f, 8.5f};
  const std::vector<float> b = {2.1f, -3.4f, 8.f, -2.f, 3.5f, 2.5f};
  auto out = run_ok(mod_node(1), {f32({6}, a), f32({6}, b)});
  std::vector<float> want;
  for (size_t i = 0; i < a.size(); ++i) want.push_back(static_cast<float>(std::fmod(double(a[i]), double(b[i]))));
  expect_near_all(values_f32(out[0]), want, 1e-6f, 1e-6f);
  out = run_ok(mod_node(0), {f32({6}, a), f32({6}, b)});
  want.clear();
  for (size_t i = 0; i < a.size(); ++i) want.push_back(static_cast<float>(floored(a[i], b[i])));
  expect_near_all(values_f32(out[0]), want, 1e-5f, 1e-5f);
  Tensor ha = f16({6}, a), hb = f16({6}, b);
  out = run_ok(mod_node(1), {ha, hb});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  auto av = values_f32(ha), bv = values_f32(hb);
  want.clear();
  for (size_t i = 0; i < a.size(); ++i) want.push_back(static_cast<float>(std::fmod(double(av[i]), double(bv[i]))));
  expect_near_all(values_f32(out[0]), want, 1e-3f, 2e-3f);
}

TEST(Mod, BroadcastsLikeAdd) {
  // [2, 3] % [3]: the divisor row repeats.
  auto out = run_ok(mod_node(0), {i64({2, 3}, {10, -10, 7, 11, 12, -13}), i64({3}, {3, 4, -5})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1, 2, -3, 2, 0, -3}));
  // [3, 1] % [1, 2] -> [3, 2].
  out = run_ok(mod_node(1), {i32({3, 1}, {7, -7, 9}), i32({1, 2}, {2, 4})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 2}));
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{1, 3, -1, -3, 1, 1}));
}

TEST(Mod, RejectsMixedTypesBadShapesAndFmod) {
  EXPECT_FALSE(run_status(mod_node(0), {i64({2}, {1, 2}), i32({2}, {1, 2})}).ok());
  EXPECT_FALSE(run_status(mod_node(0), {i64({2}, {1, 2}), i64({3}, {1, 2, 3})}).ok());
  EXPECT_EQ(run_status(mod_node(2), {i64({1}, {1}), i64({1}, {1})}).code(), StatusCode::kInvalidModel);
}

}  // namespace
}  // namespace streamrt
