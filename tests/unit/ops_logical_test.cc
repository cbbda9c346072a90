#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

TEST(Logical, Not) {
  auto out = run_ok(make_node("Not", 1), {boolean({2, 2}, {1, 0, 0, 1})});
  EXPECT_EQ(out[0].dtype(), DataType::kBool);
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{0, 1, 1, 0}));
}

TEST(Logical, TruthTables) {
  const Tensor a = boolean({4}, {0, 0, 1, 1});
  const Tensor b = boolean({4}, {0, 1, 0, 1});
  EXPECT_EQ(values_bool(run_ok(make_node("And", 2), {a, b})[0]), (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(values_bool(run_ok(make_node("Or", 2), {a, b})[0]), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(values_bool(run_ok(make_node("Xor", 2), {a, b})[0]), (std::vector<uint8_t>{0, 1, 1, 0}));
}

TEST(Logical, Broadcast) {
  // [2,1,3] with [2,1] -> [2,2,3]; reference by a naive loop.
  std::vector<uint8_t> a = {1, 0, 1, 0, 0, 1};
  std::vector<uint8_t> b = {1, 0};
  auto out = run_ok(make_node("Xor", 2), {boolean({2, 1, 3}, a), boolean({2, 1}, b)});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2, 3}));
  std::vector<uint8_t> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) want.push_back((a[i * 3 + k] != 0) != (b[j] != 0));
  EXPECT_EQ(values_bool(out[0]), want);
}

TEST(Logical, NonCanonicalBytesAreTrueAndOutputsCanonical) {
  auto out = run_ok(make_node("And", 2), {boolean({2}, {2, 255}), boolean({2}, {1, 0})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0}));
  out = run_ok(make_node("Not", 1), {boolean({1}, {7})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{0}));
}

TEST(Logical, RejectNonBool) {
  EXPECT_EQ(run_status(make_node("Not", 1), {f32({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(make_node("And", 2), {boolean({1}, {1}), u8({1}, {1})}).code(),
            StatusCode::kUnsupported);
  EXPECT_FALSE(run_status(make_node("Or", 2), {boolean({2}, {1, 0}), boolean({3}, {1, 0, 1})}).ok());
}

TEST(Logical, InferDynamic) {
  auto r = infer_only(make_node("Or", 2), {info(DataType::kBool, {-1, 3}), info(DataType::kBool, {1})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 3}));
  r = infer_only(make_node("Not", 1), {unranked(DataType::kBool)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
}

}  // namespace
}  // namespace streamrt
