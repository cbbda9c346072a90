#include <cmath>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;
using ir::Attribute;

const std::vector<float> kXs = {-4.f, -1.5f, -0.5f, 0.f, 0.5f, 1.5f, 4.f};

std::vector<float> map_ref(const std::vector<float>& xs, double (*f)(double, double, double),
                         double a = 0, double b = 0) {
  std::vector<float> out;
  for (float x : xs) out.push_back(static_cast<float>(f(x, a, b)));
  return out;
}

TEST(Activations, LeakyReluDefaultAndAlpha) {
  auto out = run_ok(make_node("LeakyRelu", 1), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), {-0.04f, -0.015f, -0.005f, 0.f, 0.5f, 1.5f, 4.f}, 1e-6f, 0);
  out = run_ok(make_node("LeakyRelu", 1, 1, {{"alpha", Attribute::make_float(0.5f)}}), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), {-2.f, -0.75f, -0.25f, 0.f, 0.5f, 1.5f, 4.f}, 1e-6f, 0);
}

TEST(Activations, Elu) {
  auto ref = [](double x, double a, double) { return x >= 0 ? x : a * (std::exp(x) - 1); };
  auto out = run_ok(make_node("Elu", 1), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, ref, 1.0), 1e-6f, 1e-7f);
  out = run_ok(make_node("Elu", 1, 1, {{"alpha", Attribute::make_float(2.f)}}), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, ref, 2.0), 1e-6f, 1e-7f);
}

TEST(Activations, SeluDefaultsAndAttributes) {
  auto ref = [](double x, double a, double g) { return x > 0 ? g * x : g * a * (std::exp(x) - 1); };
  auto out = run_ok(make_node("Selu", 1), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, ref, 1.6732632423543772, 1.0507009873554805), 1e-6f, 1e-7f);
  out = run_ok(make_node("Selu", 1, 1, {{"alpha", Attribute::make_float(2.f)},
                                         {"gamma", Attribute::make_float(3.f)}}),
               {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, ref, 2.0, 3.0), 1e-6f, 1e-7f);
}

TEST(Activations, HardSigmoidAndHardSwish) {
  auto hs = [](double x, double a, double b) { return std::max(0.0, std::min(1.0, a * x + b)); };
  auto out = run_ok(make_node("HardSigmoid", 1), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, hs, 0.2, 0.5), 1e-6f, 1e-7f);
  out = run_ok(make_node("HardSigmoid", 1, 1, {{"alpha", Attribute::make_float(0.5f)},
                                                {"beta", Attribute::make_float(0.6f)}}),
               {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, hs, 0.5, 0.6), 1e-6f, 1e-7f);
  // HardSwish: x * relu6(x + 3) / 6.
  auto swish = [](double x, double, double) { return x * std::min(6.0, std::max(0.0, x + 3)) / 6; };
  out = run_ok(make_node("HardSwish", 1, 1, {}, 14), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, swish), 1e-6f, 1e-7f);
}

TEST(Activations, GeluExactAndTanh) {
  auto exact = [](double x, double, double) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  auto tanh_approx = [](double x, double, double) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  auto out = run_ok(make_node("Gelu", 1, 1, {}, 20), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, exact), 1e-6f, 1e-7f);
  out = run_ok(make_node("Gelu", 1, 1, {{"approximate", Attribute::make_string("tanh")}}, 20), {f32({7}, kXs)});
  expect_near_all(values_f32(out[0]), map_ref(kXs, tanh_approx), 1e-6f, 1e-7f);
  // The two differ measurably at x = -1.5 (spot check that the attribute is honoured).
  EXPECT_GT(std::fabs(exact(-1.5, 0, 0) - tanh_approx(-1.5, 0, 0)), 1e-4);
}

TEST(Activations, HalfTypes) {
  auto ref = [](double x, double a, double) { return x >= 0 ? x : a * (std::exp(x) - 1); };
  Tensor h = f16({7}, kXs);
  auto out = run_ok(make_node("Elu", 1), {h});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  expect_near_all(values_f32(out[0]), map_ref(values_f32(h), ref, 1.0), 1e-3f, 2.5e-3f);
  Tensor b = bf16({7}, kXs);
  out = run_ok(make_node("Gelu", 1, 1, {}, 20), {b});
  EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
  auto gelu = [](double x, double, double) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  expect_near_all(values_f32(out[0]), map_ref(values_f32(b), gelu), 1e-2f, 2e-2f);
}

TEST(Activations, BadAttributesAreErrors) {
  auto st = run_status(make_node("Gelu", 1, 1, {{"approximate", Attribute::make_string("erf")}}, 20),
                       {f32({1}, {1})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("approximate"), std::string::npos) << st.message();
  // alpha given as an int attribute: wrong kind.
  st = run_status(make_node("LeakyRelu", 1, 1, {{"alpha", Attribute::make_int(1)}}), {f32({1}, {1})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("alpha"), std::string::npos) << st.message();
  st = run_status(make_node("Selu", 1, 1, {{"gamma", Attribute::make_string("x")}}), {f32({1}, {1})});
  EXPECT_FALSE(st.ok());
}

TEST(Activations, RejectIntegerInputs) {
  for (const char* op : {"LeakyRelu", "Elu", "Selu", "HardSigmoid", "HardSwish", "Gelu"}) {
    auto st = run_status(make_node(op, 1, 1, {}, 20), {i32({1}, {1})});
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << op;
  }
}

TEST(Activations, InferDynamic) {
  auto r = infer_only(make_node("HardSwish", 1, 1, {}, 14), {info(DataType::kBFloat16, {-1, -1, 8})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1, -1, 8}));
  r = infer_only(make_node("Gelu", 1, 1, {}, 20), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
}

}  // namespace
}  // namespace streamrt
