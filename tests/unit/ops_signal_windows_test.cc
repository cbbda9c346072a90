#include <cmath>

#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node window_node(const std::string& op, std::map<std::string, ir::Attribute> attrs = {}) {
  return make_node(op, 1, 1, std::move(attrs), 17);
}

// Textbook definitions, written out independently of the kernel's shared formula.
std::vector<float> expected(const std::string& op, int64_t size, bool periodic) {
  const double pi = std::acos(-1.0);
  const double N = periodic ? size : size - 1;
  std::vector<float> w;
  for (int64_t n = 0; n < size; ++n) {
    const double x = n / N;
    if (op == "HannWindow") w.push_back(float(std::pow(std::sin(pi * x), 2)));
    else if (op == "HammingWindow") w.push_back(float(0.54347826086956519 - 0.45652173913043481 * std::cos(2 * pi * x)));
    else w.push_back(float(0.42 - 0.5 * std::cos(2 * pi * x) + 0.08 * std::cos(4 * pi * x)));
  }
  return w;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "at " << i;
}

TEST(SignalWindows, PeriodicAndSymmetric) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    auto out = run_ok(window_node(op), {i32({}, {10})});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
    EXPECT_EQ(out[0].dims(), (Dims{10}));
    expect_near_all(values_f32(out[0]), expected(op, 10, true));
    out = run_ok(window_node(op, {{"periodic", ir::Attribute::make_int(0)}}), {i64({}, {7})});
    expect_near_all(values_f32(out[0]), expected(op, 7, false));
  }
  // Spot values: Hann symmetric of 5 = [0, .5, 1, .5, 0]; periodic of 4 = [0, .5, 1, .5].
  auto out = run_ok(window_node("HannWindow", {{"periodic", ir::Attribute::make_int(0)}}), {i64({}, {5})});
  expect_near_all(values_f32(out[0]), {0, 0.5f, 1, 0.5f, 0});
  out = run_ok(window_node("HannWindow"), {i64({}, {4})});
  expect_near_all(values_f32(out[0]), {0, 0.5f, 1, 0.5f});
}

TEST(SignalWindows, EdgeSizesAndOutputType) {
  auto out = run_ok(window_node("HammingWindow"), {i64({}, {0})});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
  out = run_ok(window_node("HannWindow", {{"periodic", ir::Attribute::make_int(0)}}), {i64({}, {1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1}));
  out = run_ok(window_node("HannWindow", {{"output_datatype", ir::Attribute::make_int(10)}}), {i64({}, {4})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  expect_near_all(values_f32(out[0]), {0, 0.5f, 1, 0.5f});
  out = run_ok(window_node("HannWindow", {{"output_datatype", ir::Attribute::make_int(7)}}), {i64({}, {4})});
  EXPECT_EQ(out[0].dtype(), DataType::kInt64);
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{0, 0, 1, 0}));
}

TEST(SignalWindows, InferAndErrors) {
  const auto* schema = ops::OpRegistry::global().find("BlackmanWindow");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->shape_inputs, (std::vector<int>{0}));
  EXPECT_EQ(schema->min_opset, 17);
  Tensor n = i64({}, {6});
  auto r = infer_infos(window_node("BlackmanWindow"), {value_of(n)});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{6}));
  r = infer_infos(window_node("BlackmanWindow"), {known(DataType::kInt64, {})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1}));
  EXPECT_FALSE(infer_infos(window_node("HannWindow"), {known(DataType::kFloat32, {})}).ok());
  EXPECT_FALSE(run_status(window_node("HannWindow"), {i64({}, {-3})}).ok());
  EXPECT_FALSE(run_status(window_node("HannWindow"), {i64({}, {int64_t{1} << 50})}).ok());
  Status st = run_status(window_node("HannWindow", {{"output_datatype", ir::Attribute::make_int(8)}}),
                         {i64({}, {3})});
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();  // string
}

}  // namespace
}  // namespace streamrt
