#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference over a [2,3] x [3] broadcast.
std::vector<uint8_t> reference(const std::vector<float>& a, const std::vector<float>& b,
                               bool (*f)(float, float)) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < 3; ++j) out.push_back(f(a[i * 3 + j], b[j]) ? 1 : 0);
  return out;
}

const std::vector<float> kA = {1, 2, 3, 4, 5, 6};
const std::vector<float> kB = {2, 5, 3};

struct Case {
  const char* op;
  bool (*f)(float, float);
};
const Case kCases[] = {
    {"Equal", [](float a, float b) { return a == b; }},
    {"Less", [](float a, float b) { return a < b; }},
    {"Greater", [](float a, float b) { return a > b; }},
    {"LessOrEqual", [](float a, float b) { return a <= b; }},
    {"GreaterOrEqual", [](float a, float b) { return a >= b; }},
};

TEST(Compare, Float32Broadcast) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.op);
    auto out = run_ok(make_node(c.op, 2), {f32({2, 3}, kA), f32({3}, kB)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), DataType::kBool);
    EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
    EXPECT_EQ(values_bool(out[0]), reference(kA, kB, c.f));
  }
}

TEST(Compare, AllNumericTypes) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.op);
    const auto want = reference(kA, kB, c.f);
    auto check = [&](Tensor a, Tensor b) {
      auto out = run_ok(make_node(c.op, 2), {a, b});
      EXPECT_EQ(values_bool(out[0]), want) << dtype_name(a.dtype());
    };
    check(f16({2, 3}, kA), f16({3}, kB));
    check(bf16({2, 3}, kA), bf16({3}, kB));
    check(i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({3}, {2, 5, 3}));
    check(i32({2, 3}, {1, 2, 3, 4, 5, 6}), i32({3}, {2, 5, 3}));
    check(i8({2, 3}, {1, 2, 3, 4, 5, 6}), i8({3}, {2, 5, 3}));
    check(u8({2, 3}, {1, 2, 3, 4, 5, 6}), u8({3}, {2, 5, 3}));
  }
}

TEST(Compare, SignednessMatters) {
  auto out = run_ok(make_node("Less", 2), {i8({2}, {-1, 1}), i8({2}, {1, -1})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0}));
  out = run_ok(make_node("Less", 2), {u8({2}, {255, 1}), u8({2}, {1, 255})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{0, 1}));
}

TEST(Compare, EqualOnBools) {
  auto out = run_ok(make_node("Equal", 2), {boolean({2, 2}, {1, 0, 1, 0}), boolean({2}, {1, 0})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 1, 1, 1}));
  // Any non-zero byte is true.
  out = run_ok(make_node("Equal", 2), {boolean({2}, {2, 0}), boolean({2}, {1, 1})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0}));
}

TEST(Compare, NaNIsUnordered) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& c : kCases) {
    auto out = run_ok(make_node(c.op, 2), {f32({1}, {nan}), f32({1}, {nan})});
    EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{0})) << c.op;
  }
}

TEST(Compare, Errors) {
  // Mixed types.
  auto st = run_status(make_node("Equal", 2), {f32({1}, {1}), i64({1}, {1})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  // Ordering on bools is not an ONNX op.
  st = run_status(make_node("Less", 2), {boolean({1}, {1}), boolean({1}, {0})});
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  // Shapes that do not broadcast.
  st = run_status(make_node("Greater", 2), {f32({2}, {1, 2}), f32({3}, {1, 2, 3})});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("broadcast"), std::string::npos) << st.message();
}

TEST(Compare, InferDynamic) {
  auto r = infer_only(make_node("Equal", 2), {info(DataType::kInt64, {-1, 1}), info(DataType::kInt64, {4})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype, DataType::kBool);
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 4}));
  r = infer_only(make_node("Less", 2), {unranked(DataType::kFloat32), info(DataType::kFloat32, {4})});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dtype, DataType::kBool);
}

}  // namespace
}  // namespace streamrt

namespace streamrt {
namespace {

// The kernel must not trust that run-time dims broadcast (inference may have seen -1).
TEST(Compare, KernelRejectsMismatchedRuntimeDims) {
  ir::Node node = testing::make_node("Less", 2);
  const ops::OpSchema* schema = ops::OpRegistry::global().find("Less");
  float a[3] = {1, 2, 3}, b[2] = {1, 2};
  uint8_t y[3] = {};
  std::vector<ops::TensorRef> ins = {{DataType::kFloat32, {3}, a}, {DataType::kFloat32, {2}, b}};
  std::vector<ops::TensorRef> outs = {{DataType::kBool, {3}, y}};
  ops::KernelContext ctx(node, ins, outs);
  auto st = schema->cpu(ctx);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("does not broadcast"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace streamrt
