#include "indexing_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference: the flat data element that each element of indices picks.
std::vector<int64_t> gather_elements_map(const Dims& data, int64_t axis, const Dims& idx_dims,
                                         const std::vector<int64_t>& idx) {
  std::vector<int64_t> map;
  for (int64_t i = 0, n = dims_numel(idx_dims); i < n; ++i) {
    auto pos = unravel(i, idx_dims);
    const int64_t v = idx[static_cast<size_t>(i)];
    pos[static_cast<size_t>(axis)] = v < 0 ? v + data[static_cast<size_t>(axis)] : v;
    map.push_back(ravel(pos, data));
  }
  return map;
}

void check(DataType dt, const Dims& data_dims, int64_t axis, const Dims& idx_dims, const std::vector<int64_t>& idx,
           bool int32 = false, int opset = 13) {
  Tensor x = pattern(dt, data_dims);
  auto out = run_ok(make_node("GatherElements", 2, 1, {{"axis", ai(axis)}}, opset),
                    {x, index_tensor(idx_dims, idx, int32)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), idx_dims);
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(data_dims.size()) : axis;
  expect_picked(out[0], x, gather_elements_map(data_dims, a, idx_dims, idx));
}

TEST(GatherElementsOp, NodeTestCasesEveryDtype) {
  for (DataType dt : kAllDTypes) {
    check(dt, {2, 2}, 1, {2, 2}, {0, 0, 1, 0});                         // test_gather_elements_0
    check(dt, {3, 3}, 0, {2, 3}, {1, 2, 0, 2, 0, 0});                   // test_gather_elements_1
    check(dt, {3, 3}, 0, {2, 3}, {-1, -2, 0, -2, 0, 0}, true, 11);      // _negative_indices
  }
}

TEST(GatherElementsOp, SmallerIndicesAndInnerAxes) {
  // Indices smaller than data off the axis, longer along it; rank 3, negative axis.
  check(DataType::kFloat32, {2, 3, 4}, -1, {1, 2, 6}, {3, 0, 1, -1, 2, 2, 0, 0, 1, 3, -4, 2});
  check(DataType::kInt64, {2, 3, 4}, 1, {2, 1, 3}, {2, 0, 1, -3, 1, 2}, true);
  check(DataType::kFloat16, {4, 2}, 0, {0, 2}, {});  // empty indices
}

TEST(GatherElementsOp, KnownValues) {
  auto out = run_ok(make_node("GatherElements", 2, 1, {{"axis", ai(1)}}, 11),
                    {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, 0})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 1, 4, 3}));
  out = run_ok(make_node("GatherElements", 2), {i64({3}, {7, 8, 9}), i64({0}, {})});
  EXPECT_EQ(out[0].dims(), Dims{0});
}

TEST(GatherElementsOp, OutOfRangeIndexIsAnError) {
  Tensor x = pattern(DataType::kFloat32, {3, 2});
  Status st = run_status(make_node("GatherElements", 2), {x, i64({1, 2}, {0, 3})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("out of range"), std::string::npos) << st.message();
  EXPECT_FALSE(run_status(make_node("GatherElements", 2), {x, i64({1, 1}, {-4})}).ok());
  EXPECT_FALSE(run_status(make_node("GatherElements", 2, 1, {{"axis", ai(1)}}), {x, i32({1, 1}, {2})}).ok());
  // Indices only known at run time: the kernel itself refuses them.
  EXPECT_EQ(run_kernel(make_node("GatherElements", 2), {x, i64({1, 1}, {3})}, DataType::kFloat32, {1, 1}).code(),
            StatusCode::kInvalidArgument);
}

TEST(GatherElementsOp, ShapeErrors) {
  Tensor x = pattern(DataType::kFloat32, {3, 2});
  // Rank mismatch, indices larger than data off the axis, bad axis, float indices, scalar data.
  EXPECT_FALSE(run_status(make_node("GatherElements", 2), {x, i64({2}, {0, 1})}).ok());
  EXPECT_FALSE(run_status(make_node("GatherElements", 2), {x, i64({1, 3}, {0, 1, 2})}).ok());
  EXPECT_FALSE(run_status(make_node("GatherElements", 2, 1, {{"axis", ai(2)}}), {x, i64({1, 1}, {0})}).ok());
  EXPECT_FALSE(run_status(make_node("GatherElements", 2), {x, f32({1, 1}, {0})}).ok());
  EXPECT_FALSE(run_status(make_node("GatherElements", 2), {f32({}, {1}), i64({}, {0})}).ok());
}

TEST(GatherElementsOp, InferDynamicAndVerify) {
  auto node = make_node("GatherElements", 2, 1, {{"axis", ai(1)}});
  auto r = infer(node, {info(DataType::kBFloat16, {-1, 5}), info(DataType::kInt32, {-1, 7})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 7}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kBFloat16);
  r = infer(node, {unranked(DataType::kFloat32), info(DataType::kInt64, {3, 3})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{3, 3}));
  EXPECT_FALSE(infer(node, {info(DataType::kFloat32, {2, 5}), info(DataType::kInt64, {3, 1})}).status.ok());
  EXPECT_EQ(ops::OpRegistry::global().find("GatherElements")->min_opset, 11);
  const auto ins = {info(DataType::kFloat32, {2, 5}), info(DataType::kInt64, {2, 5})};
  EXPECT_FALSE(run_verify(make_node("GatherElements", 2, 1, {{"axis", ai(-3)}}), ins).ok());
  EXPECT_TRUE(run_verify(make_node("GatherElements", 2, 1, {{"axis", ai(-2)}}), ins).ok());
}

}  // namespace
}  // namespace streamrt
