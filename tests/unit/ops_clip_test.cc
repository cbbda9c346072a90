#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;
using ir::Attribute;

TEST(Clip, InputsBothBounds) {
  auto out = run_ok(make_node("Clip", 3, 1, {}, 13),
                    {f32({2, 3}, {-3, -1, 0, 1, 2, 5}), f32({}, {-1.5f}), f32({}, {1.5f})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-1.5f, -1, 0, 1, 1.5f, 1.5f}));
}

TEST(Clip, OmittedBoundsAreUnbounded) {
  const Tensor x = f32({4}, {-1e30f, -2, 2, 1e30f});
  // Only max (min omitted as an empty input).
  auto out = run_ok(make_node("Clip", 3, 1, {}, 12), {x, Tensor(), f32({}, {0})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-1e30f, -2, 0, 0}));
  // Only min.
  out = run_ok(make_node("Clip", 2, 1, {}, 12), {x, f32({1}, {0})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 0, 2, 1e30f}));
  // Neither.
  out = run_ok(make_node("Clip", 1, 1, {}, 12), {x});
  EXPECT_EQ(values_f32(out[0]), values_f32(x));
}

TEST(Clip, MinAboveMaxGivesMax) {
  auto out = run_ok(make_node("Clip", 3, 1, {}, 13), {f32({3}, {-5, 0, 5}), f32({}, {2}), f32({}, {1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 1, 1}));
}

TEST(Clip, NaNPassesThrough) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = run_ok(make_node("Clip", 3, 1, {}, 13), {f32({2}, {nan, 3}), f32({}, {0}), f32({}, {1})});
  auto v = values_f32(out[0]);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 1.f);
}

TEST(Clip, AttributesBeforeOpset11) {
  auto out = run_ok(make_node("Clip", 1, 1, {{"min", Attribute::make_float(-1.f)},
                                              {"max", Attribute::make_float(1.f)}}, 6),
                    {f32({4}, {-2, -0.5f, 0.5f, 2})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-1, -0.5f, 0.5f, 1}));
  out = run_ok(make_node("Clip", 1, 1, {{"max", Attribute::make_float(0.f)}}, 6), {f32({2}, {-7, 7})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-7, 0}));
  // At opset 11 the attributes are gone: bounds come from inputs only.
  out = run_ok(make_node("Clip", 1, 1, {{"max", Attribute::make_float(0.f)}}, 11), {f32({2}, {-7, 7})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-7, 7}));
}

TEST(Clip, IntegerTypes) {
  auto out = run_ok(make_node("Clip", 3, 1, {}, 13),
                    {i8({5}, {-128, -10, 0, 10, 127}), i8({}, {-5}), i8({}, {5})});
  EXPECT_EQ(values_as<int8_t>(out[0]), (std::vector<int8_t>{-5, -5, 0, 5, 5}));
  // Only min, int64: max defaults to the type's maximum.
  out = run_ok(make_node("Clip", 2, 1, {}, 13),
               {i64({3}, {std::numeric_limits<int64_t>::min(), 0, std::numeric_limits<int64_t>::max()}),
                i64({}, {-1})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-1, 0, std::numeric_limits<int64_t>::max()}));
  out = run_ok(make_node("Clip", 3, 1, {}, 13), {u8({3}, {0, 100, 255}), Tensor(), u8({}, {200})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{0, 100, 200}));
}

TEST(Clip, HalfTypes) {
  auto out = run_ok(make_node("Clip", 3, 1, {}, 13),
                    {f16({4}, {-3, -0.25f, 0.25f, 3}), f16({}, {-0.5f}), f16({}, {0.5f})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-0.5f, -0.25f, 0.25f, 0.5f}));
  out = run_ok(make_node("Clip", 3, 1, {}, 13), {bf16({2}, {-3, 3}), bf16({}, {-1}), bf16({}, {2})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-1, 2}));
}

TEST(Clip, Errors) {
  // Bound of another type.
  auto st = run_status(make_node("Clip", 3, 1, {}, 13), {f32({2}, {1, 2}), i64({}, {0}), Tensor()});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  // Bound that is not a scalar.
  st = run_status(make_node("Clip", 3, 1, {}, 13), {f32({2}, {1, 2}), f32({2}, {0, 0}), Tensor()});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("scalar"), std::string::npos) << st.message();
  // Attribute of the wrong kind before opset 11.
  st = run_status(make_node("Clip", 1, 1, {{"min", Attribute::make_int(0)}}, 6), {f32({1}, {1})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  // Integer input before opset 11 (float only then).
  st = run_status(make_node("Clip", 1, 1, {}, 6), {i64({1}, {1})});
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  st = run_status(make_node("Clip", 1, 1, {}, 13), {boolean({1}, {1})});
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
}

TEST(Clip, InferDynamic) {
  auto r = infer_only(make_node("Clip", 3, 1, {}, 13),
                      {info(DataType::kFloat32, {-1, 4}), info(DataType::kFloat32, {}), ops::TensorInfo{}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 4}));
  // A bound of unknown shape is accepted (checked by the kernel).
  r = infer_only(make_node("Clip", 3, 1, {}, 13),
                 {unranked(DataType::kFloat32), unranked(DataType::kFloat32), ops::TensorInfo{}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
}

}  // namespace
}  // namespace streamrt
