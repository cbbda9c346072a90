#include <cmath>

#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node nll_node(const std::string& reduction, std::optional<int64_t> ignore = std::nullopt, size_t inputs = 2,
                  int opset = 13) {
  std::map<std::string, ir::Attribute> attrs{{"reduction", ir::Attribute::make_string(reduction)}};
  if (ignore) attrs["ignore_index"] = ir::Attribute::make_int(*ignore);
  return make_node("NegativeLogLikelihoodLoss", inputs, 1, std::move(attrs), opset);
}

std::vector<float> iota_values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7) % 11) - 1.f;
  return v;
}

TEST(NegativeLogLikelihoodLoss, NoneWithWeightPicksClassEntries) {
  // input [3, 4]: loss[n] = -x[n, t[n]] * w[t[n]].
  const std::vector<float> x = {0.1f, 0.2f, 0.3f, 0.4f, 1, 2, 3, 4, -1, -2, -3, -4};
  auto out = run_ok(nll_node("none", std::nullopt, 3),
                    {f32({3, 4}, x), i64({3}, {3, 0, 2}), f32({4}, {1, 2, 3, 4})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-0.4f * 4, -1 * 1, 3 * 3}));
}

// loss over [N, C, d1, d2] with explicit 4-D indexing, for the reductions.
float reference(const std::vector<float>& x, const std::vector<int64_t>& t, const std::vector<float>& w, int64_t N,
                int64_t C, int64_t D1, int64_t D2, int64_t ignore, bool mean) {
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t a = 0; a < D1; ++a)
      for (int64_t b = 0; b < D2; ++b) {
        const int64_t c = t[(n * D1 + a) * D2 + b];
        if (c == ignore) continue;
        const double wc = w.empty() ? 1.0 : w[c];
        sum += -x[((n * C + c) * D1 + a) * D2 + b] * wc;
        wsum += wc;
      }
  return static_cast<float>(mean ? sum / wsum : sum);
}

TEST(NegativeLogLikelihoodLoss, NDMeanAndSumWithIgnoreIndex) {
  const int64_t N = 2, C = 3, D1 = 2, D2 = 3;
  auto x = iota_values(N * C * D1 * D2, 0.25f);
  const std::vector<int64_t> t = {0, 1, 2, 2, 1, 0, 1, 1, 2, 0, 0, 1};
  const std::vector<float> w = {0.5f, 2.f, 1.5f};
  std::vector<int32_t> t32(t.begin(), t.end());
  auto out = run_ok(nll_node("mean", 1, 3), {f32({N, C, D1, D2}, x), i32({N, D1, D2}, t32), f32({C}, w)});
  EXPECT_EQ(out[0].dims(), (Dims{}));
  EXPECT_NEAR(values_f32(out[0])[0], reference(x, t, w, N, C, D1, D2, 1, true), 1e-6);
  out = run_ok(nll_node("sum", std::nullopt, 2, 12), {f32({N, C, D1, D2}, x), i64({N, D1, D2}, t)});
  EXPECT_NEAR(values_f32(out[0])[0], reference(x, t, {}, N, C, D1, D2, -100, false), 1e-5);
  out = run_ok(nll_node("mean", 2, 2), {f32({N, C, D1, D2}, x), i64({N, D1, D2}, t)});
  EXPECT_NEAR(values_f32(out[0])[0], reference(x, t, {}, N, C, D1, D2, 2, true), 1e-6);
  // Default reduction is mean.
  out = run_ok(make_node("NegativeLogLikelihoodLoss", 2, 1, {}, 22), {f32({N, C, D1, D2}, x), i64({N, D1, D2}, t)});
  EXPECT_NEAR(values_f32(out[0])[0], reference(x, t, {}, N, C, D1, D2, -100, true), 1e-6);
}

TEST(NegativeLogLikelihoodLoss, IgnoredTargetMayBeOutOfRange) {
  auto out = run_ok(nll_node("none", -1), {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {-1, 1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, -4}));
  out = run_ok(nll_node("none", 7), {f16({2, 2}, {1, 2, 3, 4}), i64({2}, {7, 0})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, -3}));
}

TEST(NegativeLogLikelihoodLoss, InferAndErrors) {
  auto r = infer_infos(nll_node("none"), {known(DataType::kFloat32, {-1, 5, 7}), known(DataType::kInt64, {4, -1})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{4, 7}));
  r = infer_infos(nll_node("sum"), {known(DataType::kFloat32, {4, 5}), known(DataType::kInt64, {4})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{}));
  EXPECT_FALSE(infer_infos(nll_node("none"), {known(DataType::kFloat32, {4, 5, 6}), known(DataType::kInt64, {4})}).ok());
  EXPECT_FALSE(infer_infos(nll_node("max"), {known(DataType::kFloat32, {4, 5}), known(DataType::kInt64, {4})}).ok());
  EXPECT_FALSE(infer_infos(nll_node("sum", std::nullopt, 3), {known(DataType::kFloat32, {4, 5}),
                                                               known(DataType::kInt64, {4}),
                                                               known(DataType::kFloat32, {6})})
                   .ok());
  Status st = run_status(nll_node("mean"), {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {0, 2})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("target 2"), std::string::npos) << st.message();
  EXPECT_FALSE(run_status(nll_node("mean"), {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {-1, 0})}).ok());
}

}  // namespace
}  // namespace streamrt
