#include <cmath>
#include <functional>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

struct UnaryCase {
  const char* op;
  std::function<double(double)> ref;  // computed in double, independently of the kernel
  std::vector<float> inputs;
};

const std::vector<float> kAny = {-3.5f, -1.f, -0.25f, 0.f, 0.3f, 1.f, 2.5f, 7.f};
const std::vector<float> kUnit = {-1.f, -0.75f, -0.2f, 0.f, 0.1f, 0.5f, 0.9f, 1.f};
const std::vector<float> kOpenUnit = {-0.99f, -0.5f, -0.1f, 0.f, 0.2f, 0.7f};
const std::vector<float> kAtLeastOne = {1.f, 1.5f, 2.f, 10.f, 100.f, 1e4f};

std::vector<UnaryCase> cases() {
  return {
      {"Acos", [](double x) { return std::acos(x); }, kUnit},
      {"Asin", [](double x) { return std::asin(x); }, kUnit},
      {"Atan", [](double x) { return std::atan(x); }, kAny},
      {"Tan", [](double x) { return std::tan(x); }, kAny},
      {"Acosh", [](double x) { return std::acosh(x); }, kAtLeastOne},
      {"Asinh", [](double x) { return std::asinh(x); }, kAny},
      {"Atanh", [](double x) { return std::atanh(x); }, kOpenUnit},
      {"Cosh", [](double x) { return std::cosh(x); }, kAny},
      {"Sinh", [](double x) { return std::sinh(x); }, kAny},
  };
}

std::vector<float> reference(const UnaryCase& c, const std::vector<float>& xs) {
  std::vector<float> out;
  for (float x : xs) out.push_back(static_cast<float>(c.ref(x)));
  return out;
}

TEST(UnaryMathExtra, Float32MatchesStdMathInDouble) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.op);
    const Dims dims{2, static_cast<int64_t>(c.inputs.size() / 2)};
    auto out = run_ok(make_node(c.op, 1, 1, {}, 9), {f32(dims, c.inputs)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
    EXPECT_EQ(out[0].dims(), dims);
    expect_near_all(values_f32(out[0]), reference(c, c.inputs), 2e-6f, 1e-7f);
  }
}

TEST(UnaryMathExtra, HalfTypesComputeInFloat) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.op);
    const Dims dims{static_cast<int64_t>(c.inputs.size())};
    Tensor h = f16(dims, c.inputs);
    auto out = run_ok(make_node(c.op, 1, 1, {}, 13), {h});
    EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
    expect_near_all(values_f32(out[0]), reference(c, values_f32(h)), 1e-3f, 2.5e-3f);
    Tensor b = bf16(dims, c.inputs);
    out = run_ok(make_node(c.op, 1, 1, {}, 13), {b});
    EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
    expect_near_all(values_f32(out[0]), reference(c, values_f32(b)), 1e-2f, 2e-2f);
  }
}

TEST(UnaryMathExtra, OutOfDomainIsNaN) {
  auto out = run_ok(make_node("Acos", 1), {f32({2}, {1.5f, -2.f})});
  for (float v : values_f32(out[0])) EXPECT_TRUE(std::isnan(v));
  out = run_ok(make_node("Acosh", 1), {f32({1}, {0.5f})});
  EXPECT_TRUE(std::isnan(values_f32(out[0])[0]));
  out = run_ok(make_node("Atanh", 1), {f32({2}, {1.f, -1.f})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{INFINITY, -INFINITY}));
}

TEST(UnaryMathExtra, RoundHalvesToEven) {
  const std::vector<float> x = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.4f, 0.6f, -0.6f, 2.49f, 1e8f};
  const std::vector<float> want = {0.f, 2.f, 2.f, -0.f, -2.f, -2.f, 0.f, 1.f, -1.f, 2.f, 1e8f};
  auto out = run_ok(make_node("Round", 1, 1, {}, 11), {f32({11}, x)});
  EXPECT_EQ(values_f32(out[0]), want);
  out = run_ok(make_node("Round", 1, 1, {}, 11), {f16({6}, {0.5f, 1.5f, 2.5f, -3.5f, 4.5f, 7.25f})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0.f, 2.f, 2.f, -4.f, 4.f, 7.f}));
}

TEST(UnaryMathExtra, SignOfEveryNumericType) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = run_ok(make_node("Sign", 1), {f32({5}, {-2.5f, 0.f, 3.f, -INFINITY, nan})});
  auto v = values_f32(out[0]);
  EXPECT_EQ(v[0], -1.f);
  EXPECT_EQ(v[1], 0.f);
  EXPECT_EQ(v[2], 1.f);
  EXPECT_EQ(v[3], -1.f);
  EXPECT_TRUE(std::isnan(v[4]));
  out = run_ok(make_node("Sign", 1), {i64({4}, {-7, 0, 9, std::numeric_limits<int64_t>::min()})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-1, 0, 1, -1}));
  out = run_ok(make_node("Sign", 1), {i8({3}, {-128, 0, 127})});
  EXPECT_EQ(values_as<int8_t>(out[0]), (std::vector<int8_t>{-1, 0, 1}));
  out = run_ok(make_node("Sign", 1), {u8({3}, {0, 1, 255})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{0, 1, 1}));
  out = run_ok(make_node("Sign", 1), {bf16({3}, {-0.1f, 0.f, 5.f})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-1.f, 0.f, 1.f}));
}

TEST(UnaryMathExtra, IntegerInputsRejectedWhereOnlyFloatsAreAllowed) {
  for (const char* op : {"Acos", "Tan", "Cosh", "Round"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(run_status(make_node(op, 1), {i64({2}, {1, 2})}).code(), StatusCode::kUnsupported);
  }
}

}  // namespace
}  // namespace streamrt
