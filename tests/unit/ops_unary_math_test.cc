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
const std::vector<float> kPositive = {0.01f, 0.25f, 1.f, 2.f, 9.f, 100.f};

std::vector<UnaryCase> cases() {
  return {
      {"Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, kAny},
      {"Tanh", [](double x) { return std::tanh(x); }, kAny},
      {"Erf", [](double x) { return std::erf(x); }, kAny},
      {"Sqrt", [](double x) { return std::sqrt(x); }, kPositive},
      {"Reciprocal", [](double x) { return 1.0 / x; }, kPositive},
      {"Exp", [](double x) { return std::exp(x); }, kAny},
      {"Log", [](double x) { return std::log(x); }, kPositive},
      {"Neg", [](double x) { return -x; }, kAny},
      {"Abs", [](double x) { return std::fabs(x); }, kAny},
      {"Floor", [](double x) { return std::floor(x); }, kAny},
      {"Ceil", [](double x) { return std::ceil(x); }, kAny},
      {"Sin", [](double x) { return std::sin(x); }, kAny},
      {"Cos", [](double x) { return std::cos(x); }, kAny},
      {"Softplus", [](double x) { return std::log(1.0 + std::exp(x)); }, kAny},
      {"Softsign", [](double x) { return x / (1.0 + std::fabs(x)); }, kAny},
  };
}

std::vector<float> reference(const UnaryCase& c, const std::vector<float>& xs) {
  std::vector<float> out;
  for (float x : xs) out.push_back(static_cast<float>(c.ref(x)));
  return out;
}

TEST(UnaryMath, Float32MatchesStdMath) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.op);
    const Dims dims{2, static_cast<int64_t>(c.inputs.size() / 2)};
    auto out = run_ok(make_node(c.op, 1), {f32(dims, c.inputs)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
    EXPECT_EQ(out[0].dims(), dims);
    expect_near_all(values_f32(out[0]), reference(c, c.inputs), 1e-6f, 1e-7f);
  }
}

TEST(UnaryMath, HalfTypesComputeInFloat) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.op);
    const Dims dims{static_cast<int64_t>(c.inputs.size())};
    // The kernel sees the inputs rounded to the half type; so does the reference.
    Tensor h = f16(dims, c.inputs);
    auto out = run_ok(make_node(c.op, 1), {h});
    EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
    expect_near_all(values_f32(out[0]), reference(c, values_f32(h)), 1e-3f, 2.5e-3f);

    Tensor b = bf16(dims, c.inputs);
    out = run_ok(make_node(c.op, 1), {b});
    EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
    expect_near_all(values_f32(out[0]), reference(c, values_f32(b)), 1e-2f, 2e-2f);
  }
}

TEST(UnaryMath, ExtremeInputsStayFinite) {
  auto sig = run_ok(make_node("Sigmoid", 1), {f32({3}, {-100.f, 100.f, -1000.f})});
  auto v = values_f32(sig[0]);
  EXPECT_GE(v[0], 0.f);
  EXPECT_LT(v[0], 1e-40f);
  EXPECT_EQ(v[1], 1.f);
  EXPECT_EQ(v[2], 0.f);
  auto sp = run_ok(make_node("Softplus", 1), {f32({2}, {100.f, -100.f})});
  v = values_f32(sp[0]);
  EXPECT_FLOAT_EQ(v[0], 100.f);  // log(1 + e^100) overflows if computed naively
  EXPECT_GE(v[1], 0.f);
  EXPECT_LT(v[1], 1e-40f);
}

TEST(UnaryMath, SpecialValues) {
  auto out = run_ok(make_node("Log", 1), {f32({3}, {0.f, -1.f, 1.f})});
  auto v = values_f32(out[0]);
  EXPECT_TRUE(std::isinf(v[0]) && v[0] < 0);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 0.f);
  out = run_ok(make_node("Reciprocal", 1), {f32({1}, {0.f})});
  EXPECT_TRUE(std::isinf(values_f32(out[0])[0]));
}

TEST(UnaryMath, NegOnSignedIntegers) {
  auto out = run_ok(make_node("Neg", 1), {i64({3}, {5, -7, 0})});
  EXPECT_EQ(out[0].dtype(), DataType::kInt64);
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-5, 7, 0}));
  out = run_ok(make_node("Neg", 1), {i32({2}, {std::numeric_limits<int32_t>::min(), 3})});
  // Two's complement wrap for the most negative value, as every framework does.
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -3}));
  out = run_ok(make_node("Neg", 1), {i8({3}, {-128, 127, -1})});
  EXPECT_EQ(values_as<int8_t>(out[0]), (std::vector<int8_t>{-128, -127, 1}));
}

TEST(UnaryMath, AbsOnIntegers) {
  auto out = run_ok(make_node("Abs", 1), {i64({3}, {-5, 7, std::numeric_limits<int64_t>::min()})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{5, 7, std::numeric_limits<int64_t>::min()}));
  out = run_ok(make_node("Abs", 1), {u8({2}, {0, 255})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{0, 255}));
  out = run_ok(make_node("Abs", 1), {i8({2}, {-3, 4})});
  EXPECT_EQ(values_as<int8_t>(out[0]), (std::vector<int8_t>{3, 4}));
}

TEST(UnaryMath, RejectsUnsupportedTypes) {
  for (const char* op : {"Sigmoid", "Exp", "Floor", "Softsign"}) {
    auto st = run_status(make_node(op, 1), {i64({1}, {1})});
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << op;
    EXPECT_NE(st.message().find("int64"), std::string::npos) << st.message();
  }
  EXPECT_EQ(run_status(make_node("Neg", 1), {u8({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(make_node("Abs", 1), {boolean({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_FALSE(run_status(make_node("Tanh", 1), {Tensor()}).ok());  // missing input
}

TEST(UnaryMath, InferKeepsDynamicDimsAndUnknownRank) {
  auto r = infer_only(make_node("Exp", 1), {info(DataType::kFloat16, {-1, 3})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat16);
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 3}));
  r = infer_only(make_node("Neg", 1), {unranked(DataType::kInt32)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dtype, DataType::kInt32);
}

TEST(UnaryMath, EmptyTensor) {
  auto out = run_ok(make_node("Sqrt", 1), {f32({0, 3}, {})});
  EXPECT_EQ(out[0].dims(), (Dims{0, 3}));
}

}  // namespace
}  // namespace streamrt
