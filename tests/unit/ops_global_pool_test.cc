#include "compute_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

TEST(GlobalPool, AverageAndMaxOverSpatialAxes) {
  for (Dims xd : {Dims{2, 3, 7}, Dims{2, 3, 4, 5}, Dims{1, 2, 3, 4, 2}}) {
    auto x = random_values(numel(xd), static_cast<uint32_t>(xd.size()));
    const int64_t planes = xd[0] * xd[1], size = numel(xd) / planes;
    std::vector<float> avg, mx;
    for (int64_t p = 0; p < planes; ++p) {
      double s = 0;
      float m = x[p * size];
      for (int64_t i = 0; i < size; ++i) s += x[p * size + i], m = std::max(m, x[p * size + i]);
      avg.push_back(static_cast<float>(s / size));
      mx.push_back(m);
    }
    Dims yd = xd;
    std::fill(yd.begin() + 2, yd.end(), 1);
    auto out = run_ok(make_node("GlobalAveragePool", 1), {f32(xd, x)});
    EXPECT_EQ(out[0].dims(), yd);
    expect_close(values_f32(out[0]), avg);
    out = run_ok(make_node("GlobalMaxPool", 1), {f32(xd, x)});
    EXPECT_EQ(out[0].dims(), yd);
    EXPECT_EQ(values_f32(out[0]), mx);
    auto xh = rounded(DataType::kFloat16, x);
    out = run_ok(make_node("GlobalAveragePool", 1), {float_tensor(DataType::kFloat16, xd, xh)});
    expect_close(values_f32(out[0]), avg, DataType::kFloat16);
  }
}

TEST(GlobalPool, HandComputed) {
  auto out = run_ok(make_node("GlobalAveragePool", 1), {f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -6})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2.5f, -3}));
  out = run_ok(make_node("GlobalMaxPool", 1), {f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -6})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{4, -1}));
}

TEST(GlobalPool, InferAndErrors) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    auto r = infer_only(make_node(op, 1), {{DataType::kFloat32, {-1, 8, -1, -1}}});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ((*r)[0].dims, (Dims{-1, 8, 1, 1}));
    r = infer_only(make_node(op, 1), {{DataType::kFloat32, {}, false}});
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE((*r)[0].has_shape);
    EXPECT_FALSE(ops::evaluate_on_host(make_node(op, 1), {f32({4}, {1, 2, 3, 4})}).ok());
    auto bad = ops::evaluate_on_host(make_node(op, 1), {i64({1, 1, 2}, {1, 2})});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
  }
}

}  // namespace
}  // namespace streamrt
