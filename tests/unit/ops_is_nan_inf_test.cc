#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const std::vector<float> kX = {-INFINITY, -1.5f, 0.f, kNaN, 3.f, INFINITY, -kNaN};

TEST(IsNaNInf, IsNaNPerDtype) {
  for (int opset : {9, 13, 20}) {
    SCOPED_TRACE(opset);
    for (const Tensor& x : {f32({7}, kX), f16({7}, kX), bf16({7}, kX)}) {
      auto out = run_ok(make_node("IsNaN", 1, 1, {}, opset), {x});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dtype(), DataType::kBool);
      EXPECT_EQ(out[0].dims(), (Dims{7}));
      EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 1}));
    }
  }
}

TEST(IsNaNInf, IsInfDetectFlags) {
  auto attrs = [](int64_t neg, int64_t pos) {
    return std::map<std::string, ir::Attribute>{{"detect_negative", ir::Attribute::make_int(neg)},
                                                {"detect_positive", ir::Attribute::make_int(pos)}};
  };
  auto out = run_ok(make_node("IsInf", 1, 1, {}, 10), {f32({7}, kX)});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0, 0, 0, 0, 1, 0}));
  out = run_ok(make_node("IsInf", 1, 1, attrs(1, 0), 10), {f16({7}, kX)});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0}));
  out = run_ok(make_node("IsInf", 1, 1, attrs(0, 1), 20), {bf16({7}, kX)});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{0, 0, 0, 0, 0, 1, 0}));
  out = run_ok(make_node("IsInf", 1, 1, attrs(0, 0), 20), {f32({7}, kX)});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>(7, 0)));
}

TEST(IsNaNInf, ShapeKeptAndIntegersRejected) {
  auto infos = infer_only(make_node("IsNaN", 1, 1, {}, 13), {info(DataType::kFloat16, {2, -1, 3})});
  ASSERT_TRUE(infos.ok());
  EXPECT_EQ((*infos)[0].dtype, DataType::kBool);
  EXPECT_EQ((*infos)[0].dims, (Dims{2, -1, 3}));
  EXPECT_EQ(run_status(make_node("IsInf", 1, 1, {}, 10), {i32({1}, {1})}).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace streamrt
