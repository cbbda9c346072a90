#include "compute_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Y = alpha * op(A) * op(B) + beta * C by triple loop; C (cdims, may be empty = absent)
// broadcast by hand.
std::vector<float> naive_gemm(const std::vector<float>& a, const std::vector<float>& b,
                              const std::vector<float>* c, const Dims& cdims, int64_t m,
                              int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta) {
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += double(ta ? a[p * m + i] : a[i * k + p]) * double(tb ? b[j * k + p] : b[p * n + j]);
      double cv = 0;
      if (c) {
        int64_t ci = cdims.size() == 2 ? (cdims[0] == 1 ? 0 : i) : 0;
        int64_t cj = cdims.empty() ? 0 : (cdims.back() == 1 ? 0 : j);
        int64_t ld = cdims.empty() ? 1 : cdims.back();
        cv = (*c)[ci * ld + cj];
      }
      y[i * n + j] = static_cast<float>(alpha * acc + beta * cv);
    }
  return y;
}

ir::Node gemm_node(bool ta, bool tb, float alpha, float beta, size_t inputs = 3, int opset = 13) {
  return make_node("Gemm", inputs, 1,
                   {{"transA", int_attr(ta)}, {"transB", int_attr(tb)}, {"alpha", float_attr(alpha)},
                    {"beta", float_attr(beta)}},
                   opset);
}

TEST(Gemm, MatchesNaiveAcrossTransposesAndBiasShapes) {
  const int64_t m = 5, n = 7, k = 6;
  const std::vector<Dims> biases = {{}, {1}, {n}, {1, n}, {m, 1}, {m, n}};
  uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const Dims& cd : biases) {
        SCOPED_TRACE(::testing::Message() << "transA " << ta << " transB " << tb << " C " << dims_to_string(cd));
        auto a = random_values(m * k, seed++), b = random_values(k * n, seed++), c = random_values(numel(cd), seed++);
        auto out = run_ok(gemm_node(ta, tb, 0.75f, -1.5f),
                          {f32(ta ? Dims{k, m} : Dims{m, k}, a), f32(tb ? Dims{n, k} : Dims{k, n}, b), f32(cd, c)});
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(out[0].dims(), (Dims{m, n}));
        expect_close(values_f32(out[0]), naive_gemm(a, b, &c, cd, m, n, k, ta, tb, 0.75f, -1.5f));
      }
}

TEST(Gemm, WithoutBias) {
  auto a = random_values(3 * 4, 7), b = random_values(4 * 2, 8);
  auto out = run_ok(gemm_node(false, false, 2.f, 1.f, 2), {f32({3, 4}, a), f32({4, 2}, b)});
  expect_close(values_f32(out[0]), naive_gemm(a, b, nullptr, {}, 3, 2, 4, false, false, 2.f, 0.f));
}

TEST(Gemm, ZeroBetaIgnoresBias) {
  std::vector<float> c = {NAN, NAN};
  auto out = run_ok(gemm_node(false, false, 1.f, 0.f), {f32({1, 2}, {1, 2}), f32({2, 2}, {1, 0, 0, 1}), f32({2}, c)});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 2}));
}

TEST(Gemm, HandComputed) {
  // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]]; + 10 * [1, 2]
  auto out = run_ok(gemm_node(false, false, 1.f, 10.f),
                    {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 6, 7, 8}), f32({2}, {1, 2})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{29, 42, 53, 70}));
}

// Few rows (up to ops::kHalfGemmMaxRows, without transA) read the half-type B as stored; more
// rows, or transA, widen it and call BLAS. Both, with either layout of B.
TEST(Gemm, HalfPrecisionPaths) {
  const int64_t n = 9, k = 33;
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16})
    for (int64_t m : {int64_t{4}, int64_t{20}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          SCOPED_TRACE(std::string(dtype_name(t)) + " m " + std::to_string(m) + (ta ? " transA" : "") +
                       (tb ? " transB" : ""));
          auto a = rounded(t, random_values(m * k, 21)), b = rounded(t, random_values(n * k, 22));
          auto c = rounded(t, random_values(n, 23));
          const Dims ad = ta ? Dims{k, m} : Dims{m, k}, bd = tb ? Dims{n, k} : Dims{k, n};
          auto out = run_ok(gemm_node(ta, tb, 0.5f, 1.f),
                            {float_tensor(t, ad, a), float_tensor(t, bd, b), float_tensor(t, {n}, c)});
          ASSERT_EQ(out[0].dtype(), t);
          expect_close(values_f32(out[0]), naive_gemm(a, b, &c, {n}, m, n, k, ta, tb, 0.5f, 1.f), t);
        }
}

TEST(Gemm, Int64IsExact) {
  auto out = run_ok(gemm_node(true, false, 1.f, 1.f),
                    {i64({2, 2}, {1, 3, 2, 4}), i64({2, 1}, {1LL << 40, 1}), i64({1}, {5})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{(1LL << 40) + 2 + 5, 3 * (1LL << 40) + 4 + 5}));
}

TEST(Gemm, InferKeepsDynamicDimsAndRefinesFromBias) {
  auto r = infer_only(gemm_node(false, false, 1.f, 1.f),
                      {{DataType::kFloat32, {-1, 8}}, {DataType::kFloat32, {8, -1}}, {DataType::kFloat32, {16}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 16}));
  r = infer_only(gemm_node(true, false, 1.f, 1.f, 2),
                 {{DataType::kFloat16, {}, false}, {DataType::kFloat16, {-1, 4}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 4}));
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat16);
}

TEST(Gemm, RejectsBadShapes) {
  auto node = gemm_node(false, false, 1.f, 1.f);
  // Inner dims differ.
  auto r = ops::evaluate_on_host(node, {f32({2, 3}, random_values(6, 1)), f32({4, 2}, random_values(8, 2)), f32({1}, {0})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("inner dimensions"), std::string::npos) << r.status().message();
  // C does not broadcast to 2x2.
  r = ops::evaluate_on_host(node, {f32({2, 3}, random_values(6, 1)), f32({3, 2}, random_values(6, 2)), f32({3}, {0, 0, 0})});
  EXPECT_FALSE(r.ok());
  // Rank 3 A.
  r = ops::evaluate_on_host(node, {f32({1, 2, 3}, random_values(6, 1)), f32({3, 2}, random_values(6, 2)), f32({1}, {0})});
  EXPECT_FALSE(r.ok());
  // Mixed types.
  r = ops::evaluate_on_host(node, {f32({1, 1}, {1}), i64({1, 1}, {1}), f32({1}, {0})});
  EXPECT_FALSE(r.ok());
  // Dynamic inner dims that disagree.
  EXPECT_FALSE(infer_only(node, {{DataType::kFloat32, {-1, 3}}, {DataType::kFloat32, {4, -1}}}).ok());
}

TEST(Gemm, RejectsUnsupportedTypes) {
  auto r = ops::evaluate_on_host(gemm_node(false, false, 1.f, 1.f, 2),
                                 {Tensor::from_vector(DataType::kBool, {1, 1}, std::vector<uint8_t>{1}),
                                  Tensor::from_vector(DataType::kBool, {1, 1}, std::vector<uint8_t>{1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace streamrt
