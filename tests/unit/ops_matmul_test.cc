#include "compute_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// numpy matmul by explicit promotion, broadcasting and a triple loop.
std::vector<double> naive_matmul(const std::vector<float>& a, Dims ad, const std::vector<float>& b, Dims bd) {
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  Dims ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  const size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  Dims ob(r);
  for (size_t i = 0; i < r; ++i) ob[i] = std::max(ab[i], bb[i]);
  std::vector<double> y;
  for (int64_t bi = 0; bi < numel(ob); ++bi) {
    // Decode the output batch index, then map to A's and B's (size-1 dims repeat).
    int64_t rem = bi, ao = 0, bo = 0, as = 1, bs = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t idx = rem % ob[d];
      rem /= ob[d];
      ao += (ab[d] == 1 ? 0 : idx) * as;
      bo += (bb[d] == 1 ? 0 : idx) * bs;
      as *= ab[d];
      bs *= bb[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += double(a[(ao * m + i) * k + p]) * double(b[(bo * k + p) * n + j]);
        y.push_back(acc);
      }
  }
  return y;
}

struct Case {
  Dims a, b, y;
};

TEST(MatMul, MatchesNumpySemantics) {
  const std::vector<Case> cases = {
      {{5}, {5}, {}},
      {{5}, {5, 3}, {3}},
      {{4, 5}, {5}, {4}},
      {{4, 5}, {5, 3}, {4, 3}},
      {{2, 4, 5}, {5, 3}, {2, 4, 3}},
      {{4, 5}, {2, 5, 3}, {2, 4, 3}},
      {{2, 4, 5}, {2, 5, 3}, {2, 4, 3}},
      {{2, 1, 4, 5}, {3, 5, 3}, {2, 3, 4, 3}},
      {{1, 3, 4, 5}, {2, 1, 5, 3}, {2, 3, 4, 3}},
      {{3, 5}, {2, 2, 5, 1}, {2, 2, 3, 1}},
      {{2, 3, 5}, {5}, {2, 3}},
      {{5}, {2, 5, 3}, {2, 3}},
      {{0, 5}, {5, 3}, {0, 3}},
      {{2, 0}, {0, 3}, {2, 3}},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(dims_to_string(c.a) + " @ " + dims_to_string(c.b));
    auto a = random_values(numel(c.a), seed++), b = random_values(numel(c.b), seed++);
    auto out = run_ok(make_node("MatMul", 2), {float_tensor(DataType::kFloat32, c.a, a),
                                               float_tensor(DataType::kFloat32, c.b, b)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dims(), c.y);
    auto want = naive_matmul(a, c.a, b, c.b);
    expect_close(values_f32(out[0]), std::vector<float>(want.begin(), want.end()));
  }
}

TEST(MatMul, HalfPrecisionPaths) {
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    auto a = rounded(t, random_values(2 * 3 * 40, 5)), b = rounded(t, random_values(2 * 40 * 7, 6));
    auto out = run_ok(make_node("MatMul", 2), {float_tensor(t, {2, 3, 40}, a), float_tensor(t, {2, 40, 7}, b)});
    ASSERT_EQ(out[0].dtype(), t);
    auto want = naive_matmul(a, {2, 3, 40}, b, {2, 40, 7});
    expect_close(values_f32(out[0]), std::vector<float>(want.begin(), want.end()), t);
  }
}

// A shared half-type B against few rows of A (a decode step: read as stored) and against more
// (widened for BLAS), with A batched, a vector, or 2-D.
TEST(MatMul, HalfWeightAgainstFewAndManyRows) {
  struct Case {
    Dims a, b;
  };
  const std::vector<Case> cases = {{{1, 3, 40}, {40, 7}},   {{2, 8, 40}, {40, 7}}, {{40}, {40, 9}},
                                   {{17, 40}, {40, 1030}}, {{5, 40}, {40, 1030}}, {{16, 8}, {8}}};
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + dims_to_string(c.a) + " @ " + dims_to_string(c.b));
      auto a = rounded(t, random_values(numel(c.a), 7)), b = rounded(t, random_values(numel(c.b), 8));
      auto out = run_ok(make_node("MatMul", 2), {float_tensor(t, c.a, a), float_tensor(t, c.b, b)});
      ASSERT_EQ(out[0].dtype(), t);
      auto want = naive_matmul(a, c.a, b, c.b);
      expect_close(values_f32(out[0]), std::vector<float>(want.begin(), want.end()), t);
    }
}

TEST(MatMul, Int32BroadcastsExactly) {
  auto a = Tensor::from_vector(DataType::kInt32, {2, 1, 2}, std::vector<int32_t>{1, 2, 3, 4});
  auto b = Tensor::from_vector(DataType::kInt32, {2, 1}, std::vector<int32_t>{10, 100});
  auto out = run_ok(make_node("MatMul", 2), {a, b});
  EXPECT_EQ(out[0].dims(), (Dims{2, 1, 1}));
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{210, 430}));
}

TEST(MatMul, InferHandlesDynamicAndUnknownRank) {
  auto node = make_node("MatMul", 2);
  auto r = infer_only(node, {{DataType::kFloat32, {-1, 4, 8}}, {DataType::kFloat32, {8, 16}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 4, 16}));
  r = infer_only(node, {{DataType::kFloat32, {-1, -1, -1}}, {DataType::kFloat32, {3, -1, 16}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{3, -1, 16}));
  r = infer_only(node, {{DataType::kFloat32, {}, false}, {DataType::kFloat32, {8, 16}}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
}

TEST(MatMul, RejectsBadShapesAndTypes) {
  auto node = make_node("MatMul", 2);
  auto r = ops::evaluate_on_host(node, {f32({2, 3}, random_values(6, 1)), f32({4, 2}, random_values(8, 2))});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("inner dimensions"), std::string::npos);
  r = ops::evaluate_on_host(node, {f32({2, 2, 3}, random_values(12, 1)), f32({3, 3, 2}, random_values(18, 2))});
  EXPECT_FALSE(r.ok());  // batch 2 vs 3
  r = ops::evaluate_on_host(node, {f32({}, {1}), f32({1}, {1})});
  EXPECT_FALSE(r.ok());  // scalar operand
  r = ops::evaluate_on_host(node, {f32({1, 1}, {1}), i64({1, 1}, {1})});
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(infer_only(node, {{DataType::kFloat32, {2, 3}}, {DataType::kFloat32, {4, -1}}}).ok());
}

}  // namespace
}  // namespace streamrt
