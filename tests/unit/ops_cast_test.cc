#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;
using ir::Attribute;

ir::Node cast_to(int64_t onnx_type) {
  return make_node("Cast", 1, 1, {{"to", Attribute::make_int(onnx_type)}}, 13);
}

// ONNX numbers for the 8 streamrt dtypes.
struct Target {
  int64_t onnx;
  DataType dtype;
};
const Target kTargets[] = {
    {1, DataType::kFloat32}, {2, DataType::kUInt8}, {3, DataType::kInt8},  {6, DataType::kInt32},
    {7, DataType::kInt64},   {9, DataType::kBool},  {10, DataType::kFloat16}, {16, DataType::kBFloat16},
};

// Small non-negative integers are exact in every dtype, so every pair must round-trip them
// (bool: 0 -> 0, anything else -> 1).
TEST(Cast, EveryPairOnSmallIntegers) {
  const std::vector<float> vals = {0, 1, 2, 7, 100};
  for (const auto& from : kTargets) {
    Tensor src = run_ok(cast_to(from.onnx), {f32({5}, vals)})[0];
    ASSERT_EQ(src.dtype(), from.dtype);
    std::vector<float> src_vals = values_f32(src);
    for (const auto& to : kTargets) {
      SCOPED_TRACE(std::string(dtype_name(from.dtype)) + " -> " + dtype_name(to.dtype));
      auto out = run_ok(cast_to(to.onnx), {src});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dtype(), to.dtype);
      EXPECT_EQ(out[0].dims(), (Dims{5}));
      std::vector<float> want;
      for (float v : src_vals) want.push_back(to.dtype == DataType::kBool ? (v != 0 ? 1.f : 0.f) : v);
      EXPECT_EQ(values_f32(out[0]), want);
    }
  }
}

TEST(Cast, FloatToIntTruncatesTowardZero) {
  const Tensor x = f32({6}, {2.9f, -2.9f, 0.5f, -0.5f, 100.99f, -100.99f});
  EXPECT_EQ(values_i64(run_ok(cast_to(7), {x})[0]), (std::vector<int64_t>{2, -2, 0, 0, 100, -100}));
  EXPECT_EQ(values_as<int32_t>(run_ok(cast_to(6), {x})[0]), (std::vector<int32_t>{2, -2, 0, 0, 100, -100}));
  EXPECT_EQ(values_as<int8_t>(run_ok(cast_to(3), {x})[0]), (std::vector<int8_t>{2, -2, 0, 0, 100, -100}));
  // From half types too.
  EXPECT_EQ(values_i64(run_ok(cast_to(7), {f16({2}, {3.75f, -3.75f})})[0]), (std::vector<int64_t>{3, -3}));
  EXPECT_EQ(values_i64(run_ok(cast_to(7), {bf16({2}, {-7.5f, 7.5f})})[0]), (std::vector<int64_t>{-7, 7}));
}

TEST(Cast, FloatOutOfRangeSaturatesAndNaNIsZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = f32({5}, {nan, inf, -inf, 300.f, -300.f});
  EXPECT_EQ(values_as<uint8_t>(run_ok(cast_to(2), {x})[0]), (std::vector<uint8_t>{0, 255, 0, 255, 0}));
  EXPECT_EQ(values_as<int8_t>(run_ok(cast_to(3), {x})[0]), (std::vector<int8_t>{0, 127, -128, 127, -128}));
  EXPECT_EQ(values_i64(run_ok(cast_to(7), {x})[0]),
            (std::vector<int64_t>{0, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                                  300, -300}));
  EXPECT_EQ(values_as<int32_t>(run_ok(cast_to(6), {f32({2}, {3e9f, -3e9f})})[0]),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}));
}

TEST(Cast, IntegerNarrowingWraps) {
  EXPECT_EQ(values_as<uint8_t>(run_ok(cast_to(2), {i64({3}, {256 + 5, -1, 255})})[0]),
            (std::vector<uint8_t>{5, 255, 255}));
  EXPECT_EQ(values_as<int8_t>(run_ok(cast_to(3), {i32({2}, {200, -129})})[0]), (std::vector<int8_t>{-56, 127}));
  EXPECT_EQ(values_i64(run_ok(cast_to(7), {u8({2}, {200, 0})})[0]), (std::vector<int64_t>{200, 0}));
  EXPECT_EQ(values_i64(run_ok(cast_to(7), {i8({2}, {-128, 127})})[0]), (std::vector<int64_t>{-128, 127}));
}

TEST(Cast, ToAndFromBool) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(values_bool(run_ok(cast_to(9), {f32({5}, {0.f, -0.f, 0.1f, -3.f, nan})})[0]),
            (std::vector<uint8_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(values_bool(run_ok(cast_to(9), {i64({3}, {0, -1, 256})})[0]), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(values_bool(run_ok(cast_to(9), {f16({2}, {0.f, 1e-4f})})[0]), (std::vector<uint8_t>{0, 1}));
  // Bool bytes other than 0/1 read as true and come out as 1.
  EXPECT_EQ(values_f32(run_ok(cast_to(1), {boolean({3}, {0, 1, 5})})[0]), (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(values_bool(run_ok(cast_to(9), {boolean({2}, {0, 5})})[0]), (std::vector<uint8_t>{0, 1}));
}

TEST(Cast, HalfPrecisionRounding) {
  // 1 + 2^-11 is halfway between two halfs: ties to even gives 1. 1 + 3*2^-11 rounds up.
  const float tie = 1.f + std::ldexp(1.f, -11);
  const float up = 1.f + 3 * std::ldexp(1.f, -11);
  auto h = run_ok(cast_to(10), {f32({2}, {tie, up})})[0];
  EXPECT_EQ(values_f32(h), (std::vector<float>{1.f, 1.f + std::ldexp(1.f, -9)}));
  // bfloat16 keeps 8 mantissa bits: 1 + 2^-9 is a tie -> 1.
  auto b = run_ok(cast_to(16), {f32({2}, {1.f + std::ldexp(1.f, -9), 3.0e38f})})[0];
  EXPECT_EQ(values_f32(b)[0], 1.f);
  EXPECT_NEAR(values_f32(b)[1], 3.0e38f, 3.0e38f * 1e-2f);
  // float16 overflows to inf; bfloat16 -> float16 goes through float.
  EXPECT_TRUE(std::isinf(values_f32(run_ok(cast_to(10), {f32({1}, {1e6f})})[0])[0]));
  EXPECT_EQ(values_f32(run_ok(cast_to(10), {bf16({2}, {0.5f, -2.f})})[0]), (std::vector<float>{0.5f, -2.f}));
  // int64 -> float32 rounds like static_cast.
  const int64_t big = (int64_t{1} << 40) + 1;
  EXPECT_EQ(values_f32(run_ok(cast_to(1), {i64({1}, {big})})[0])[0], static_cast<float>(big));
}

TEST(Cast, SameTypeIsCopy) {
  auto out = run_ok(cast_to(1), {f32({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Cast, UnsupportedTargetsNameTheType) {
  for (auto [num, name] : std::vector<std::pair<int64_t, std::string>>{
           {8, "STRING"}, {14, "COMPLEX64"}, {17, "FLOAT8E4M3FN"}, {21, "UINT4"}, {23, "FLOAT4E2M1"}}) {
    auto st = run_status(cast_to(num), {f32({1}, {1})});
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << num;
    EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
  }
}

TEST(Cast, BadAttribute) {
  EXPECT_EQ(run_status(cast_to(0), {f32({1}, {1})}).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(run_status(cast_to(99), {f32({1}, {1})}).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(run_status(cast_to(-1), {f32({1}, {1})}).code(), StatusCode::kInvalidModel);
  // Missing, or of the wrong kind (opset 1 used a string).
  EXPECT_EQ(run_status(make_node("Cast", 1), {f32({1}, {1})}).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(run_status(make_node("Cast", 1, 1, {{"to", Attribute::make_string("FLOAT")}}), {f32({1}, {1})}).code(),
            StatusCode::kInvalidModel);
}

TEST(CastLike, TakesTargetTypeFromSecondInput) {
  auto out = run_ok(make_node("CastLike", 2, 1, {}, 15), {f32({3}, {1.7f, -1.7f, 0}), i32({1}, {0})});
  EXPECT_EQ(out[0].dtype(), DataType::kInt32);
  EXPECT_EQ(out[0].dims(), (Dims{3}));
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{1, -1, 0}));
  out = run_ok(make_node("CastLike", 2, 1, {}, 15), {f16({2}, {0.5f, 2}), bf16({}, {0})});
  EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0.5f, 2}));
  EXPECT_FALSE(run_status(make_node("CastLike", 2, 1, {}, 15), {f32({1}, {1}), Tensor()}).ok());
}

TEST(Cast, InferDynamic) {
  auto r = infer_only(cast_to(7), {info(DataType::kFloat32, {-1, 2})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype, DataType::kInt64);
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 2}));
  r = infer_only(make_node("CastLike", 2, 1, {}, 15), {unranked(DataType::kInt64), info(DataType::kFloat16, {1})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat16);
  EXPECT_FALSE((*r)[0].has_shape);
}

}  // namespace
}  // namespace streamrt
