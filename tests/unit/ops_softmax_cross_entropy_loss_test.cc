#include <cmath>

#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node sce_node(const std::string& reduction, std::optional<int64_t> ignore, size_t inputs, size_t outputs,
                  int opset = 13) {
  std::map<std::string, ir::Attribute> attrs{{"reduction", ir::Attribute::make_string(reduction)}};
  if (ignore) attrs["ignore_index"] = ir::Attribute::make_int(*ignore);
  return make_node("SoftmaxCrossEntropyLoss", inputs, outputs, std::move(attrs), opset);
}

// Reference over [N, C, D] in double: p = exp(x) / sum exp(x) over C (no max trick: the test
// values are small), loss = -log(p[target]) * w.
struct Ref {
  std::vector<double> log_prob, loss;
  double sum = 0, wsum = 0;
};
Ref reference(const std::vector<float>& x, const std::vector<int64_t>& t, const std::vector<float>& w, int64_t N,
              int64_t C, int64_t D, int64_t ignore) {
  Ref r;
  r.log_prob.resize(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      double z = 0;
      for (int64_t c = 0; c < C; ++c) z += std::exp(double(x[(n * C + c) * D + d]));
      for (int64_t c = 0; c < C; ++c) r.log_prob[(n * C + c) * D + d] = std::log(std::exp(double(x[(n * C + c) * D + d])) / z);
      const int64_t c = t[n * D + d];
      if (c == ignore) {
        r.loss.push_back(0);
        continue;
      }
      const double wc = w.empty() ? 1 : w[c];
      r.loss.push_back(-r.log_prob[(n * C + c) * D + d] * wc);
      r.sum += r.loss.back();
      r.wsum += wc;
    }
  return r;
}

std::vector<float> values(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.3f * static_cast<float>((i * 5) % 13) - 1.5f;
  return v;
}

TEST(SoftmaxCrossEntropyLoss, NoneWithLogProbND) {
  const int64_t N = 2, C = 4, D1 = 3, D2 = 2, D = D1 * D2;
  auto x = values(N * C * D);
  const std::vector<int64_t> t = {0, 3, 1, 2, 2, 1, 3, 0, -5, 1, 2, 3};
  auto out = run_ok(sce_node("none", -5, 2, 2), {f32({N, C, D1, D2}, x), i64({N, D1, D2}, t)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dims(), (Dims{N, D1, D2}));
  EXPECT_EQ(out[1].dims(), (Dims{N, C, D1, D2}));
  Ref r = reference(x, t, {}, N, C, D, -5);
  auto loss = values_f32(out[0]);
  auto lp = values_f32(out[1]);
  for (size_t i = 0; i < loss.size(); ++i) EXPECT_NEAR(loss[i], r.loss[i], 1e-5) << i;
  for (size_t i = 0; i < lp.size(); ++i) EXPECT_NEAR(lp[i], r.log_prob[i], 1e-5) << i;
  EXPECT_EQ(loss[8], 0.f);  // the ignored element
}

TEST(SoftmaxCrossEntropyLoss, MeanAndSumWithWeights) {
  const int64_t N = 5, C = 3;
  auto x = values(N * C);
  const std::vector<int64_t> t = {2, 0, 1, 1, 0};
  const std::vector<float> w = {0.2f, 1.f, 3.f};
  Ref r = reference(x, t, w, N, C, 1, 0);
  auto out = run_ok(sce_node("mean", 0, 3, 1, 12), {f32({N, C}, x), i64({N}, t), f32({C}, w)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{}));
  EXPECT_NEAR(values_f32(out[0])[0], r.sum / r.wsum, 1e-5);
  out = run_ok(sce_node("sum", std::nullopt, 3, 1), {f32({N, C}, x), i32({N}, {2, 0, 1, 1, 0}), f32({C}, w)});
  Ref all = reference(x, t, w, N, C, 1, -100);
  EXPECT_NEAR(values_f32(out[0])[0], all.sum, 1e-5);
}

TEST(SoftmaxCrossEntropyLoss, LargeScoresDoNotOverflow) {
  auto out = run_ok(sce_node("none", std::nullopt, 2, 2), {f32({1, 2}, {1000.f, 1000.f}), i64({1}, {1})});
  EXPECT_NEAR(values_f32(out[0])[0], std::log(2.f), 1e-6);
  EXPECT_NEAR(values_f32(out[1])[0], -std::log(2.f), 1e-6);
}

TEST(SoftmaxCrossEntropyLoss, InferAndErrors) {
  auto r = infer_infos(sce_node("mean", std::nullopt, 2, 2),
                       {known(DataType::kFloat16, {3, 5, -1}), known(DataType::kInt64, {3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{}));
  EXPECT_EQ((*r)[1].dims, (Dims{3, 5, -1}));
  EXPECT_EQ((*r)[1].dtype, DataType::kFloat16);
  EXPECT_FALSE(run_status(sce_node("mean", std::nullopt, 2, 1), {f32({1, 2}, {1, 2}), i64({1}, {2})}).ok());
  EXPECT_FALSE(run_status(sce_node("mean", std::nullopt, 2, 1), {f32({1, 2}, {1, 2}), i64({2}, {0, 1})}).ok());
}

}  // namespace
}  // namespace streamrt
