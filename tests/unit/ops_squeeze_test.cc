#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Runs Unsqueeze/Squeeze with `axes` as an input (opset 13) and as an attribute (opset 11);
// both must agree. An empty `axes` means "no axes".
Dims run_both(const std::string& op, const Dims& in, const std::optional<std::vector<int64_t>>& axes,
              DataType dt = DataType::kFloat32) {
  Tensor x = pattern(dt, in);
  std::vector<Tensor> ins13 = {x};
  if (axes) ins13.push_back(i64({static_cast<int64_t>(axes->size())}, *axes));
  auto out13 = run_ok(make_node(op, ins13.size(), 1, {}, 13), ins13);
  std::map<std::string, ir::Attribute> attrs;
  if (axes) attrs["axes"] = ais(*axes);
  auto out11 = run_ok(make_node(op, 1, 1, attrs, 11), {x});
  if (out13.empty() || out11.empty()) return {-99};
  EXPECT_EQ(out13[0].dims(), out11[0].dims());
  expect_picked(out13[0], x, iota_map(x.numel()));
  expect_picked(out11[0], x, iota_map(x.numel()));
  return out13[0].dims();
}

TEST(UnsqueezeOp, NodeTestCombinations) {
  const Dims in = {3, 4, 5};
  EXPECT_EQ(run_both("Unsqueeze", in, std::vector<int64_t>{0}), (Dims{1, 3, 4, 5}));
  EXPECT_EQ(run_both("Unsqueeze", in, std::vector<int64_t>{1}), (Dims{3, 1, 4, 5}));
  EXPECT_EQ(run_both("Unsqueeze", in, std::vector<int64_t>{2}), (Dims{3, 4, 1, 5}));
  EXPECT_EQ(run_both("Unsqueeze", in, std::vector<int64_t>{3}), (Dims{3, 4, 5, 1}));
  EXPECT_EQ(run_both("Unsqueeze", {1, 3, 1, 5}, std::vector<int64_t>{-2}), (Dims{1, 3, 1, 1, 5}));
  EXPECT_EQ(run_both("Unsqueeze", in, std::vector<int64_t>{1, 4}), (Dims{3, 1, 4, 5, 1}));
  EXPECT_EQ(run_both("Unsqueeze", in, std::vector<int64_t>{2, 4, 0}), (Dims{1, 3, 1, 4, 1, 5}));
  EXPECT_EQ(run_both("Unsqueeze", in, std::vector<int64_t>{5, 4, 2}), (Dims{3, 4, 1, 5, 1, 1}));
  EXPECT_EQ(run_both("Unsqueeze", {}, std::vector<int64_t>{0}), (Dims{1}));  // scalar
}

TEST(UnsqueezeOp, EveryDtype) {
  for (DataType dt : kAllDTypes)
    EXPECT_EQ(run_both("Unsqueeze", {2, 3}, std::vector<int64_t>{-1, 0}, dt), (Dims{1, 2, 3, 1}));
}

TEST(UnsqueezeOp, Errors) {
  Tensor x = pattern(DataType::kFloat32, {3, 4});
  EXPECT_FALSE(run_status(make_node("Unsqueeze", 2, 1, {}, 13), {x, i64({1}, {3})}).ok());  // out of range
  EXPECT_FALSE(run_status(make_node("Unsqueeze", 2, 1, {}, 13), {x, i64({1}, {-4})}).ok());
  EXPECT_FALSE(run_status(make_node("Unsqueeze", 2, 1, {}, 13), {x, i64({2}, {1, 1})}).ok());  // repeated
  EXPECT_FALSE(run_status(make_node("Unsqueeze", 2, 1, {}, 13), {x, i64({2}, {1, -3})}).ok());  // same axis (-3 + 4)
  EXPECT_FALSE(run_status(make_node("Unsqueeze", 1, 1, {}, 11), {x}).ok());  // no axes at all
}

TEST(UnsqueezeOp, InferDynamic) {
  Tensor axes = i64({2}, {0, -1});
  auto r = infer(make_node("Unsqueeze", 2, 1, {}, 13), {info(DataType::kBool, {-1, 7}), known(axes)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{1, -1, 7, 1}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kBool);
  r = infer(make_node("Unsqueeze", 2, 1, {}, 13), {info(DataType::kFloat32, {-1, 7}), info(DataType::kInt64, {2})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, -1, -1}));
  r = infer(make_node("Unsqueeze", 2, 1, {}, 13), {unranked(DataType::kFloat32), known(axes)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
}

TEST(SqueezeOp, NodeTestCombinations) {
  EXPECT_EQ(run_both("Squeeze", {1, 3, 4, 5}, std::vector<int64_t>{0}), (Dims{3, 4, 5}));
  EXPECT_EQ(run_both("Squeeze", {1, 3, 1, 5}, std::vector<int64_t>{-2}), (Dims{1, 3, 5}));
  EXPECT_EQ(run_both("Squeeze", {1, 3, 1, 5}, std::nullopt), (Dims{3, 5}));  // all 1-dims
  EXPECT_EQ(run_both("Squeeze", {1, 1}, std::nullopt), Dims{});
  EXPECT_EQ(run_both("Squeeze", {1, 3, 1, 5}, std::vector<int64_t>{2, 0}), (Dims{3, 5}));
  for (DataType dt : kAllDTypes)
    EXPECT_EQ(run_both("Squeeze", {2, 1, 3}, std::vector<int64_t>{1}, dt), (Dims{2, 3}));
}

TEST(SqueezeOp, Errors) {
  Tensor x = pattern(DataType::kFloat32, {1, 3});
  Status st = run_status(make_node("Squeeze", 2, 1, {}, 13), {x, i64({1}, {1})});  // dim 3 is not 1
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("size 3"), std::string::npos) << st.message();
  EXPECT_FALSE(run_status(make_node("Squeeze", 2, 1, {}, 13), {x, i64({1}, {2})}).ok());  // bad axis
  EXPECT_FALSE(run_status(make_node("Squeeze", 1, 1, {{"axes", ais({0, 0})}}, 11), {x}).ok());  // repeated
}

TEST(SqueezeOp, InferDynamic) {
  Tensor axes = i64({1}, {1});
  // A dynamic dim at a squeezed axis is assumed to be 1.
  auto r = infer(make_node("Squeeze", 2, 1, {}, 13), {info(DataType::kFloat32, {-1, -1, 4}), known(axes)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 4}));
  // No axes and a dynamic dim: the rank is unknown.
  r = infer(make_node("Squeeze", 1, 1, {}, 13), {info(DataType::kFloat32, {1, -1, 4})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
  // Unknown axes of static length 1.
  r = infer(make_node("Squeeze", 2, 1, {}, 13), {info(DataType::kFloat32, {1, 3, 4}), info(DataType::kInt64, {1})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1}));
  r = infer(make_node("Squeeze", 1, 1, {}, 13), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
}

}  // namespace
}  // namespace streamrt
