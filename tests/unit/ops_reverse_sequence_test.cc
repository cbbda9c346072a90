#include "indexing_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node rev_node(int64_t time_axis, int64_t batch_axis, int opset = 10) {
  return make_node("ReverseSequence", 2, 1, {{"time_axis", ai(time_axis)}, {"batch_axis", ai(batch_axis)}}, opset);
}

// Naive reference: output element at (..., t on time_axis, b on batch_axis, ...) comes from time
// step lens[b] - 1 - t when t < lens[b], else t.
std::vector<int64_t> reverse_map(const Dims& dims, int64_t time_axis, const std::vector<int64_t>& lens) {
  std::vector<int64_t> map;
  const size_t ta = static_cast<size_t>(time_axis), ba = 1 - ta;
  for (int64_t e = 0, n = dims_numel(dims); e < n; ++e) {
    auto pos = unravel(e, dims);
    const int64_t len = lens[static_cast<size_t>(pos[ba])];
    if (pos[ta] < len) pos[ta] = len - 1 - pos[ta];
    map.push_back(ravel(pos, dims));
  }
  return map;
}

void check(DataType dt, const Dims& dims, int64_t time_axis, const std::vector<int64_t>& lens) {
  Tensor x = pattern(dt, dims);
  const Dims ld = {static_cast<int64_t>(lens.size())};
  auto out = run_ok(rev_node(time_axis, 1 - time_axis), {x, i64(ld, lens)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), dims);
  expect_picked(out[0], x, reverse_map(dims, time_axis, lens));
}

TEST(ReverseSequenceOp, NodeTestCases) {
  auto out = run_ok(rev_node(0, 1), {f32({4, 4}, {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}),
                                     i64({4}, {4, 3, 2, 1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15}));
  out = run_ok(rev_node(1, 0), {f32({4, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}),
                                i64({4}, {1, 2, 3, 4})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12}));
}

TEST(ReverseSequenceOp, EveryDtypeBothLayoutsInnerDims) {
  for (DataType dt : kAllDTypes) {
    check(dt, {5, 3, 2, 2}, 0, {5, 0, 3});
    check(dt, {3, 5, 4}, 1, {2, 5, 1});
    check(dt, {2, 4}, 1, {0, 4});
  }
  check(DataType::kFloat32, {0, 2}, 0, {0, 0});  // no time steps
}

TEST(ReverseSequenceOp, Errors) {
  Tensor x = pattern(DataType::kFloat32, {3, 2});
  // time 0, batch 1: lengths within [0, 3], one per batch entry.
  Status st = run_status(rev_node(0, 1), {x, i64({2}, {4, 1})});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("sequence_lens[0]"), std::string::npos) << st.message();
  EXPECT_FALSE(run_status(rev_node(0, 1), {x, i64({2}, {1, -1})}).ok());
  EXPECT_EQ(run_kernel(rev_node(0, 1), {x, i64({2}, {1, 9})}, DataType::kFloat32, {3, 2}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(run_status(rev_node(0, 1), {x, i64({3}, {1, 1, 1})}).ok());
  EXPECT_FALSE(run_status(rev_node(0, 1), {x, i32({2}, {1, 1})}).ok());
  EXPECT_FALSE(run_status(rev_node(0, 0), {x, i64({3}, {1, 1, 1})}).ok());
  EXPECT_FALSE(run_status(rev_node(2, 1), {x, i64({2}, {1, 1})}).ok());
  EXPECT_FALSE(run_status(rev_node(0, 1), {pattern(DataType::kFloat32, {3}), i64({1}, {1})}).ok());
}

TEST(ReverseSequenceOp, InferAndVerify) {
  auto r = infer(rev_node(0, 1), {info(DataType::kBFloat16, {-1, 4, 8}), info(DataType::kInt64, {-1})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 4, 8}));
  EXPECT_FALSE(infer(rev_node(0, 1), {info(DataType::kFloat32, {2, 4}), info(DataType::kInt64, {3})}).status.ok());
  EXPECT_EQ(ops::OpRegistry::global().find("ReverseSequence")->min_opset, 10);
  const auto ins = {info(DataType::kFloat32, {2, 4}), info(DataType::kInt64, {4})};
  EXPECT_TRUE(run_verify(rev_node(0, 1), ins).ok());
  EXPECT_FALSE(run_verify(rev_node(1, 1), ins).ok());
  EXPECT_FALSE(run_verify(rev_node(0, 3), ins).ok());
}

}  // namespace
}  // namespace streamrt
