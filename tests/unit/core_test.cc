#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/float16.h"
#include "core/tensor.h"
#include "streamrt/status.h"
#include "streamrt/types.h"

namespace streamrt {
namespace {

Result<int> half_of(int x) {
  if (x % 2) return invalid_argument("odd value " + std::to_string(x));
  return x / 2;
}

Status chain(int x, int* out) {
  SRT_ASSIGN_OR_RETURN(int h, half_of(x));
  SRT_ASSIGN_OR_RETURN(*out, half_of(h));
  return ok_status();
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = invalid_plan("weight 'w' past end");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidPlan);
  EXPECT_EQ(s.to_string(), "InvalidPlan: weight 'w' past end");
  EXPECT_EQ(s.with_context("plan.bin").message(), "plan.bin: weight 'w' past end");
  EXPECT_TRUE(ok_status().ok());
}

TEST(Result, PropagatesErrorsThroughMacros) {
  int out = 0;
  EXPECT_TRUE(chain(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = chain(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd value 3");
}

// In every build type (not only where assert is on): the message names the error, then abort.
TEST(ResultDeathTest, ValueOfAnErrorAbortsNamingIt) {
  Result<int> r = not_found("no tensor 'logits'");
  EXPECT_DEATH((void)r.value(), "Result::value\\(\\) called on an error: .*no tensor 'logits'");
  EXPECT_DEATH((void)*Result<std::vector<int>>(invalid_argument("bad dims")), "bad dims");
  Result<int> good = 7;
  EXPECT_EQ(good.value(), 7);
}

TEST(DataType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DataType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DataType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DataType::kInt64), 8u);
  EXPECT_EQ(dtype_size(DataType::kBool), 1u);
  EXPECT_EQ(dtype_size(DataType::kFloat64), 8u);
  EXPECT_EQ(dtype_size(DataType::kInt16), 2u);
  EXPECT_EQ(dtype_size(DataType::kUInt16), 2u);
  EXPECT_EQ(dtype_size(DataType::kUInt32), 4u);
  EXPECT_EQ(dtype_size(DataType::kUInt64), 8u);
  for (int i = 1; i <= static_cast<int>(kLastDataType); ++i) {
    auto t = static_cast<DataType>(i);
    auto parsed = parse_dtype(dtype_name(t));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_FALSE(parse_dtype("float8").ok());
  EXPECT_FALSE(is_valid_dtype(0));
  EXPECT_TRUE(is_valid_dtype(9));
  EXPECT_TRUE(is_valid_dtype(13));
  EXPECT_FALSE(is_valid_dtype(14));
}

TEST(Dims, ParseAndPrint) {
  auto d = parse_dims("1x3x?x224");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (Dims{1, 3, -1, 224}));
  EXPECT_EQ(dims_to_string(*d), "1x3x?x224");
  EXPECT_FALSE(dims_static(*d));
  EXPECT_EQ(dims_to_string({}), "scalar");
  EXPECT_FALSE(parse_dims("1xx2").ok());
  EXPECT_FALSE(parse_dims("1x-3").ok());
  EXPECT_FALSE(parse_dims("1x3a").ok());
  EXPECT_EQ(dims_numel({2, 3, 4}), 24);
  EXPECT_FALSE(checked_numel({INT64_MAX / 2, 3}).ok());
  EXPECT_FALSE(checked_numel({2, -1}).ok());
}

TEST(Float16, RoundTripsAndRounds) {
  for (float f : {0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(Half::to_float(Half::from_float(f)), f) << f;
  EXPECT_EQ(Half::to_float(Half::from_float(1e6f)), INFINITY);
  EXPECT_TRUE(std::isnan(Half::to_float(Half::from_float(NAN))));
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: rounds to even (1).
  EXPECT_EQ(Half::to_float(Half::from_float(1.f + 0.00048828125f)), 1.f);
  EXPECT_EQ(BFloat16::to_float(BFloat16::from_float(1.f)), 1.f);
  EXPECT_EQ(BFloat16::to_float(BFloat16::from_float(3.140625f)), 3.140625f);
  EXPECT_TRUE(std::isnan(BFloat16::to_float(BFloat16::from_float(NAN))));
}

// The bulk conversions (F16C where the CPU has it) agree bit for bit with the per-value ones, over
// every float16 boundary case and a sweep of bit patterns (NaNs, denormals, ties, overflow).
TEST(Float16, BulkConversionMatchesScalar) {
  std::vector<float> v = {0.f, -0.f, 1.f, 65504.f, 65520.f, 1e6f, -INFINITY, NAN, -NAN, 5.9604645e-08f,
                          2.9802322e-08f, 1.f + 0.00048828125f, 1.f + 0.0014648438f};
  for (uint32_t bits = 0; bits < 0xffffffffu - 65521u; bits += 65521u) {  // a prime stride over all patterns
    float f;
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
  }
  std::vector<uint16_t> h(v.size()), b(v.size());
  floats_to_half(v.data(), h.data(), v.size());
  floats_to_bfloat16(v.data(), b.data(), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(h[i], Half::from_float(v[i])) << "value " << i << " = " << v[i];
    ASSERT_EQ(b[i], BFloat16::from_float(v[i])) << "value " << i << " = " << v[i];
  }
}

TEST(Tensor, AllocateViewReshape) {
  auto t = Tensor::allocate(DataType::kInt32, {2, 3});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->nbytes(), 24u);
  t->mutable_data_as<int32_t>()[5] = 7;
  auto r = t->reshaped({3, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data_as<int32_t>()[5], 7);
  EXPECT_FALSE(t->reshaped({4, 2}).ok());
  auto v = t->to_int64_vector();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)[5], 7);
  EXPECT_FALSE(Tensor::allocate(DataType::kFloat32, {1 << 30, 1 << 30}).ok());
  Tensor view = Tensor::view(DataType::kInt32, {6}, t->data(), nullptr);
  EXPECT_EQ(view.mutable_data(), nullptr);
}

}  // namespace
}  // namespace streamrt
