#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Attribute attr_f(float v) { return ir::Attribute::make_float(v); }

const std::vector<float> kX = {-3.f, -1.f, -0.5f, -0.25f, 0.f, 0.25f, 0.5f, 1.f, 2.5f};

TEST(ActivationsExtra, CeluMatchesFormulaInDouble) {
  for (float alpha : {1.f, 2.f, 0.5f}) {
    SCOPED_TRACE(alpha);
    auto out = run_ok(make_node("Celu", 1, 1, {{"alpha", attr_f(alpha)}}, 12), {f32({9}, kX)});
    std::vector<float> want;
    for (float x : kX)
      want.push_back(static_cast<float>(std::max(0.0, double(x)) +
                                        std::min(0.0, alpha * (std::exp(double(x) / alpha) - 1.0))));
    expect_near_all(values_f32(out[0]), want, 1e-6f, 1e-7f);
  }
  // Default alpha 1: Celu is Elu.
  auto out = run_ok(make_node("Celu", 1, 1, {}, 12), {f32({2}, {-1.f, 3.f})});
  expect_near_all(values_f32(out[0]), {static_cast<float>(std::exp(-1.0) - 1.0), 3.f}, 1e-6f, 0.f);
  EXPECT_EQ(run_status(make_node("Celu", 1, 1, {{"alpha", attr_f(0.f)}}, 12), {f32({1}, {1.f})}).code(),
            StatusCode::kInvalidModel);
}

TEST(ActivationsExtra, ThresholdedReluKeepsOnlyAboveAlpha) {
  auto out = run_ok(make_node("ThresholdedRelu", 1, 1, {}, 10), {f32({9}, kX)});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 2.5f}));  // 1 is not > 1
  out = run_ok(make_node("ThresholdedRelu", 1, 1, {{"alpha", attr_f(-0.6f)}}, 10), {f16({9}, kX)});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 0, -0.5f, -0.25f, 0, 0.25f, 0.5f, 1.f, 2.5f}));
}

TEST(ActivationsExtra, ShrinkSoftAndHard) {
  // Soft shrink: lambd 0.5, bias 0.5.
  auto out = run_ok(make_node("Shrink", 1, 1, {{"lambd", attr_f(0.5f)}, {"bias", attr_f(0.5f)}}, 9),
                    {f32({9}, kX)});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-2.5f, -0.5f, 0, 0, 0, 0, 0, 0.5f, 2.f}));
  // Hard shrink: defaults lambd 0.5, bias 0.
  out = run_ok(make_node("Shrink", 1, 1, {}, 9), {f32({9}, kX)});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-3.f, -1.f, 0, 0, 0, 0, 0, 1.f, 2.5f}));
}

TEST(ActivationsExtra, ShrinkIntegersTruncateAndSaturate) {
  auto out = run_ok(make_node("Shrink", 1, 1, {{"lambd", attr_f(1.5f)}, {"bias", attr_f(1.5f)}}, 9),
                    {i32({5}, {-4, -2, 1, 2, 5})});
  // -4 + 1.5 = -2.5 -> -2; -2 + 1.5 = -0.5 -> 0; 2 - 1.5 = 0.5 -> 0; 5 - 1.5 = 3.5 -> 3.
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{-2, 0, 0, 0, 3}));
  out = run_ok(make_node("Shrink", 1, 1, {{"lambd", attr_f(0.f)}, {"bias", attr_f(-100.f)}}, 9),
               {i8({3}, {-100, 0, 100})});
  EXPECT_EQ(values_as<int8_t>(out[0]), (std::vector<int8_t>{-128, 0, 127}));
  out = run_ok(make_node("Shrink", 1, 1, {{"lambd", attr_f(0.f)}, {"bias", attr_f(10.f)}}, 9),
               {u8({3}, {0, 5, 200})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{0, 0, 190}));
}

TEST(ActivationsExtra, FloatOnlyOpsRejectIntegers) {
  EXPECT_EQ(run_status(make_node("Celu", 1, 1, {}, 12), {i64({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(make_node("ThresholdedRelu", 1, 1, {}, 10), {i64({1}, {1})}).code(),
            StatusCode::kUnsupported);
}

}  // namespace
}  // namespace streamrt
