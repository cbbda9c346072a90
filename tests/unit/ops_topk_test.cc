#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node topk_node(int opset, std::map<std::string, ir::Attribute> a = {}) {
  return make_node("TopK", opset >= 10 ? 2 : 1, 2, std::move(a), opset);
}
ir::Attribute ai(int64_t v) { return ir::Attribute::make_int(v); }

// Reference for one row: stable sort of the indices by value (descending for largest), so
// equal values keep index order; the first k.
std::vector<int64_t> row_ref(const std::vector<float>& row, int64_t k, bool largest) {
  std::vector<int64_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    return largest ? row[a] > row[b] : row[a] < row[b];
  });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

TEST(TopK, Opset1AttributeK) {
  auto out = run_ok(topk_node(1, {{"k", ai(2)}}), {f32({2, 4}, {1, 9, 3, 9, 5, 0, 7, 6})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{9, 9, 7, 6}));
  EXPECT_EQ(values_i64(out[1]), (std::vector<int64_t>{1, 3, 2, 3}));
}

TEST(TopK, Opset10KInputAndAxis) {
  // Along axis 0 of [3, 2]: columns.
  auto out = run_ok(topk_node(10, {{"axis", ai(0)}}), {f32({3, 2}, {1, 6, 5, 2, 3, 4}), i64({1}, {2})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{5, 6, 3, 4}));
  EXPECT_EQ(values_i64(out[1]), (std::vector<int64_t>{1, 0, 2, 2}));
}

TEST(TopK, Opset11LargestSmallestTiesAndMiddleAxis) {
  std::vector<float> x(2 * 6 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 5) % 4);  // many ties
  for (int64_t largest : {1, 0}) {
    for (int64_t k : {0, 1, 4, 6}) {
      SCOPED_TRACE("largest " + std::to_string(largest) + " k " + std::to_string(k));
      auto out = run_ok(topk_node(11, {{"axis", ai(-2)}, {"largest", ai(largest)}, {"sorted", ai(1)}}),
                        {f32({2, 6, 3}, x), i64({1}, {k})});
      ASSERT_EQ(out[0].dims(), (Dims{2, k, 3}));
      auto vals = values_f32(out[0]);
      auto idx = values_i64(out[1]);
      for (int64_t o = 0; o < 2; ++o)
        for (int64_t j = 0; j < 3; ++j) {
          std::vector<float> row;
          for (int64_t i = 0; i < 6; ++i) row.push_back(x[(o * 6 + i) * 3 + j]);
          auto want = row_ref(row, k, largest != 0);
          for (int64_t r = 0; r < k; ++r) {
            EXPECT_EQ(idx[(o * k + r) * 3 + j], want[r]);
            EXPECT_EQ(vals[(o * k + r) * 3 + j], row[want[r]]);
          }
        }
    }
  }
}

TEST(TopK, IntegersHalfAndNaN) {
  auto out = run_ok(topk_node(11, {{"largest", ai(0)}}), {i64({5}, {4, -9, 4, 100, -9}), i64({1}, {3})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-9, -9, 4}));
  EXPECT_EQ(values_i64(out[1]), (std::vector<int64_t>{1, 4, 0}));
  out = run_ok(topk_node(11), {f16({4}, {0.5f, 2.f, -1.f, 2.f}), i64({1}, {2})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2.f, 2.f}));
  EXPECT_EQ(values_i64(out[1]), (std::vector<int64_t>{1, 3}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t largest : {1, 0}) {
    out = run_ok(topk_node(11, {{"largest", ai(largest)}}), {f32({4}, {nan, 1.f, nan, 2.f}), i64({1}, {4})});
    EXPECT_EQ(values_i64(out[1]), largest ? (std::vector<int64_t>{3, 1, 0, 2}) : (std::vector<int64_t>{1, 3, 0, 2}));
  }
}

TEST(TopK, ShapesAndBadK) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run_status(topk_node(11), {x, i64({1}, {4})}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run_status(topk_node(11), {x, i64({1}, {-1})}).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(run_status(topk_node(11), {x, i64({2}, {1, 1})}).ok());
  EXPECT_FALSE(run_status(topk_node(11), {x, i32({1}, {1})}).ok());
  EXPECT_FALSE(run_status(topk_node(11, {{"axis", ai(2)}}), {x, i64({1}, {1})}).ok());
  EXPECT_FALSE(run_status(topk_node(1), {x}).ok());  // opset 1 needs the k attribute
  // K unknown at build time: the axis becomes dynamic, the rest stays.
  auto infos = infer_only(topk_node(11, {{"axis", ai(0)}}),
                          {info(DataType::kFloat32, {5, -1, 7}), info(DataType::kInt64, {1})});
  ASSERT_TRUE(infos.ok());
  EXPECT_EQ((*infos)[0].dims, (Dims{-1, -1, 7}));
  EXPECT_EQ((*infos)[1].dtype, DataType::kInt64);
  const Tensor k = i64({1}, {3});
  infos = infer_only(topk_node(11), {info(DataType::kFloat32, {5, 8}), ops::TensorInfo{DataType::kInt64, {1}, true, &k}});
  ASSERT_TRUE(infos.ok());
  EXPECT_EQ((*infos)[1].dims, (Dims{5, 3}));
}

TEST(TopK, PlanLoadBoundsAxisAndKAttribute) {
  const ops::OpSchema* s = ops::OpRegistry::global().find("TopK");
  ASSERT_TRUE(s && s->verify);
  auto verify = [&](const ir::Node& n) {
    ops::InferContext ctx(n, {info(DataType::kFloat32, {4, 5})}, 2);
    return s->verify(ctx);
  };
  EXPECT_TRUE(verify(topk_node(1, {{"k", ai(3)}})).ok());
  EXPECT_EQ(verify(topk_node(1, {{"k", ai(int64_t{1} << 40)}})).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(verify(topk_node(1, {{"k", ai(-1)}})).code(), StatusCode::kInvalidModel);
  EXPECT_EQ(verify(topk_node(1, {{"k", ai(1)}, {"axis", ai(2)}})).code(), StatusCode::kInvalidModel);
}

}  // namespace
}  // namespace streamrt
