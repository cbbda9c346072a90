#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

TEST(Where, SameShape) {
  auto out = run_ok(make_node("Where", 3), {boolean({2, 2}, {1, 0, 0, 1}), f32({2, 2}, {1, 2, 3, 4}),
                                            f32({2, 2}, {9, 8, 7, 6})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 8, 7, 4}));
}

TEST(Where, BroadcastsAllThree) {
  // condition [3,1], x [1,2], y scalar -> [3,2]; expected by a naive loop.
  std::vector<uint8_t> c = {1, 0, 1};
  std::vector<int64_t> x = {10, 20};
  auto out = run_ok(make_node("Where", 3), {boolean({3, 1}, c), i64({1, 2}, x), i64({}, {-1})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 2}));
  std::vector<int64_t> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) want.push_back(c[i] ? x[j] : -1);
  EXPECT_EQ(values_i64(out[0]), want);
}

TEST(Where, EveryElementSize) {
  auto out = run_ok(make_node("Where", 3), {boolean({2}, {0, 1}), f16({2}, {1, 2}), f16({2}, {3, 4})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3, 2}));
  out = run_ok(make_node("Where", 3), {boolean({2}, {0, 1}), u8({2}, {1, 2}), u8({1}, {7})});
  EXPECT_EQ(values_as<uint8_t>(out[0]), (std::vector<uint8_t>{7, 2}));
  out = run_ok(make_node("Where", 3), {boolean({1}, {1}), boolean({2}, {1, 0}), boolean({2}, {0, 1})});
  EXPECT_EQ(out[0].dtype(), DataType::kBool);
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0}));
  out = run_ok(make_node("Where", 3), {boolean({2}, {1, 0}), i32({2}, {5, 6}), i32({2}, {-5, -6})});
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{5, -6}));
}

TEST(Where, NonCanonicalBoolByteCountsAsTrue) {
  auto out = run_ok(make_node("Where", 3), {boolean({2}, {2, 0}), f32({2}, {1, 2}), f32({2}, {3, 4})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 4}));
}

TEST(Where, Errors) {
  // Condition not bool.
  auto st = run_status(make_node("Where", 3), {f32({1}, {1}), f32({1}, {1}), f32({1}, {2})});
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  // x and y types differ.
  st = run_status(make_node("Where", 3), {boolean({1}, {1}), f32({1}, {1}), i64({1}, {2})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  // Shapes do not broadcast.
  st = run_status(make_node("Where", 3), {boolean({3}, {1, 1, 1}), f32({2}, {1, 2}), f32({1}, {2})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
}

TEST(Where, InferDynamicAndUnranked) {
  auto r = infer_only(make_node("Where", 3), {info(DataType::kBool, {-1, 1}), info(DataType::kFloat32, {1, 5}),
                                              info(DataType::kFloat32, {})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 5}));
  r = infer_only(make_node("Where", 3), {info(DataType::kBool, {2}), unranked(DataType::kInt64),
                                         info(DataType::kInt64, {2})});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dtype, DataType::kInt64);
}

}  // namespace
}  // namespace streamrt
