#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node hardmax(std::optional<int64_t> axis, int opset) {
  std::map<std::string, ir::Attribute> a;
  if (axis) a["axis"] = ir::Attribute::make_int(*axis);
  return make_node("Hardmax", 1, 1, std::move(a), opset);
}

// One-hot of the first maximum in each group of `len` elements spaced `stride` apart,
// [outer, len, stride] layout.
std::vector<float> one_hot_ref(const std::vector<float>& x, int64_t outer, int64_t len, int64_t stride) {
  std::vector<float> y(x.size(), 0.f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < stride; ++j) {
      int64_t best = 0;
      for (int64_t k = 1; k < len; ++k)
        if (x[(o * len + k) * stride + j] > x[(o * len + best) * stride + j]) best = k;
      y[(o * len + best) * stride + j] = 1.f;
    }
  return y;
}

std::vector<float> data() {
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>((i * 11) % 7) - 3.f;  // ties included
  return x;
}

TEST(Hardmax, Opset13SingleAxis) {
  const auto x = data();
  EXPECT_EQ(values_f32(run_ok(hardmax(std::nullopt, 13), {f32({2, 3, 4}, x)})[0]), one_hot_ref(x, 6, 4, 1));
  EXPECT_EQ(values_f32(run_ok(hardmax(0, 13), {f32({2, 3, 4}, x)})[0]), one_hot_ref(x, 1, 2, 12));
  EXPECT_EQ(values_f32(run_ok(hardmax(1, 13), {f32({2, 3, 4}, x)})[0]), one_hot_ref(x, 2, 3, 4));
  EXPECT_EQ(values_f32(run_ok(hardmax(-2, 13), {f32({2, 3, 4}, x)})[0]), one_hot_ref(x, 2, 3, 4));
}

TEST(Hardmax, BeforeOpset13TheInputIsCoercedTo2D) {
  const auto x = data();
  for (int opset : {1, 11}) {
    SCOPED_TRACE(opset);
    // Default axis 1: rows of 3 * 4 elements, one 1 in each.
    EXPECT_EQ(values_f32(run_ok(hardmax(std::nullopt, opset), {f32({2, 3, 4}, x)})[0]), one_hot_ref(x, 2, 12, 1));
    EXPECT_EQ(values_f32(run_ok(hardmax(0, opset), {f32({2, 3, 4}, x)})[0]), one_hot_ref(x, 1, 24, 1));
    EXPECT_EQ(values_f32(run_ok(hardmax(2, opset), {f32({2, 3, 4}, x)})[0]), one_hot_ref(x, 6, 4, 1));
  }
  EXPECT_EQ(values_f32(run_ok(hardmax(-1, 11), {f32({2, 3, 4}, x)})[0]), one_hot_ref(x, 6, 4, 1));
}

TEST(Hardmax, HalfTypesAndNaN) {
  auto out = run_ok(hardmax(-1, 13), {f16({2, 3}, {1, 3, 3, -1, -5, -2})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 1, 0, 1, 0, 0}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  out = run_ok(hardmax(-1, 13), {bf16({4}, {1, nan, 9, nan})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 1, 0, 0}));
}

TEST(Hardmax, AxisOutOfRange) {
  EXPECT_EQ(run_status(hardmax(3, 13), {f32({2, 3, 4}, data())}).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(run_status(hardmax(-4, 13), {f32({2, 3, 4}, data())}).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(run_status(hardmax(1, 13), {i32({2, 2}, {1, 2, 3, 4})}).code(), StatusCode::kUnsupported);
}

TEST(Hardmax, PlanLoadBoundsAxis) {
  const ops::OpSchema* s = ops::OpRegistry::global().find("Hardmax");
  ASSERT_TRUE(s && s->verify);
  auto ok = [&](int64_t axis, int opset) {
    ir::Node n = hardmax(axis, opset);
    ops::InferContext ctx(n, {info(DataType::kFloat32, {2, 3, 4})}, 1);
    return s->verify(ctx).ok();
  };
  EXPECT_TRUE(ok(2, 13));
  EXPECT_FALSE(ok(3, 13));
  EXPECT_TRUE(ok(3, 1));  // before opset 11, axis == rank is a coerced [N, 1] view
  EXPECT_FALSE(ok(4, 1));
  EXPECT_FALSE(ok(-4, 13));
}

}  // namespace
}  // namespace streamrt
