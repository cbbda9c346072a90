#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node einsum_node(const std::string& eq, size_t inputs) {
  return make_node("Einsum", inputs, 1, {{"equation", ir::Attribute::make_string(eq)}}, 12);
}

std::vector<float> seq(size_t n, float start = 1.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>((i * 3) % 7) - 2.f;
  return v;
}

TEST(Einsum, BatchMatmulExplicitWithSpaces) {
  const int64_t B = 2, I = 3, J = 4, K = 2;
  auto a = seq(B * I * J), b = seq(B * J * K, 0.5f);
  auto out = run_ok(einsum_node("bij, bjk -> bik", 2), {f32({B, I, J}, a), f32({B, J, K}, b)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{B, I, K}));
  std::vector<float> want;
  for (int64_t n = 0; n < B; ++n)
    for (int64_t i = 0; i < I; ++i)
      for (int64_t k = 0; k < K; ++k) {
        float s = 0;
        for (int64_t j = 0; j < J; ++j) s += a[(n * I + i) * J + j] * b[(n * J + j) * K + k];
        want.push_back(s);
      }
  EXPECT_EQ(values_f32(out[0]), want);
}

TEST(Einsum, TransposeSumInnerProductTrace) {
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = run_ok(einsum_node("ij->ji", 1), {m});
  EXPECT_EQ(out[0].dims(), (Dims{3, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values_f32(run_ok(einsum_node("ij->i", 1), {m})[0]), (std::vector<float>{6, 15}));
  // Implicit output: letters once each in ASCII order, so "ji" transposes back to "ij" order.
  out = run_ok(einsum_node("ji", 1), {m});
  EXPECT_EQ(out[0].dims(), (Dims{3, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  out = run_ok(einsum_node("i,i", 2), {f32({3}, {1, 2, 3}), f32({3}, {4, -5, 6})});
  EXPECT_EQ(out[0].dims(), (Dims{}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{12}));
  Tensor sq = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(values_f32(run_ok(einsum_node("ii", 1), {sq})[0]), (std::vector<float>{15}));  // implicit trace
  EXPECT_EQ(values_f32(run_ok(einsum_node("ii->i", 1), {sq})[0]), (std::vector<float>{1, 5, 9}));
  EXPECT_EQ(values_f32(run_ok(einsum_node("ij->", 1), {m})[0]), (std::vector<float>{21}));
}

TEST(Einsum, EllipsisBatchDiagonalAndBroadcast) {
  // "...ii->...i" on [2, 2, 2]: the diagonal of each matrix.
  auto out = run_ok(einsum_node("...ii ->...i", 1), {f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 4, 5, 8}));
  // Ellipsis dims broadcast: [2, 1, 3] x [4, 3] -> [2, 4] after summing j ("...j,...j->..." style).
  auto a = seq(6), b = seq(12, 2.f);
  out = run_ok(einsum_node("...j,...j->...", 2), {f32({2, 1, 3}, a), f32({4, 3}, b)});
  EXPECT_EQ(out[0].dims(), (Dims{2, 4}));
  std::vector<float> want;
  for (int n = 0; n < 2; ++n)
    for (int m = 0; m < 4; ++m) {
      float s = 0;
      for (int j = 0; j < 3; ++j) s += a[n * 3 + j] * b[m * 3 + j];
      want.push_back(s);
    }
  EXPECT_EQ(values_f32(out[0]), want);
  // Implicit output puts the ellipsis first: "i...->" style "j..." keeps [..., j].
  out = run_ok(einsum_node("j...", 1), {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Einsum, ThreeOperandsAndIntegers) {
  // "i,ij,j->" = x^T M y.
  auto out = run_ok(einsum_node("i,ij,j->", 3), {f32({2}, {1, 2}), f32({2, 2}, {1, 2, 3, 4}), f32({2}, {5, -1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1 * (1 * 5 - 2) + 2 * (3 * 5 - 4)}));
  out = run_ok(einsum_node("ij,jk", 2), {i64({1, 2}, {3, -4}), i64({2, 2}, {5, 6, 7, 8})});
  EXPECT_EQ(out[0].dtype(), DataType::kInt64);
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{3 * 5 - 4 * 7, 3 * 6 - 4 * 8}));
  // Outer product (nothing summed) and an empty summed index (zeros).
  out = run_ok(einsum_node("i,j->ij", 2), {f32({2}, {1, 2}), f32({3}, {1, 10, 100})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 10, 100, 2, 20, 200}));
  out = run_ok(einsum_node("ij,jk->ik", 2), {f32({2, 0}, {}), f32({0, 2}, {})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 0, 0, 0}));
}

// Float two-operand contractions go through the packed GEMM path, int64 ones through the
// generic loop: on integer-valued data both must agree exactly.
TEST(Einsum, GemmPathMatchesGenericLoop) {
  struct Case {
    std::string eq;
    Dims a, b;
  };
  const std::vector<Case> cases = {
      {"...kj,...jj->j...k", {2, 3, 4}, {1, 4, 4}},  // diagonal, broadcast, no summed index
      {"ij,kj->ki", {3, 5}, {2, 5}},               // transposed operand and output
      {"...ij,...jk->...ik", {2, 1, 2, 3}, {3, 3, 2}},  // broadcast ellipsis batch
      {"ij,k->k", {2, 3}, {4}},                    // j summed in one operand only: generic loop
      {"abc,cba->", {2, 3, 2}, {2, 3, 2}},         // full contraction
  };
  for (const Case& c : cases) {
    std::vector<float> fa, fb;
    std::vector<int64_t> ia, ib;
    for (int64_t i = 0; i < dims_numel(c.a); ++i) ia.push_back((i * 5) % 7 - 3);
    for (int64_t i = 0; i < dims_numel(c.b); ++i) ib.push_back((i * 3) % 5 - 2);
    for (int64_t v : ia) fa.push_back(static_cast<float>(v));
    for (int64_t v : ib) fb.push_back(static_cast<float>(v));
    auto f = run_ok(einsum_node(c.eq, 2), {f32(c.a, fa), f32(c.b, fb)});
    auto g = run_ok(einsum_node(c.eq, 2), {i64(c.a, ia), i64(c.b, ib)});
    ASSERT_EQ(f.size(), 1u) << c.eq;
    ASSERT_EQ(g.size(), 1u) << c.eq;
    EXPECT_EQ(f[0].dims(), g[0].dims()) << c.eq;
    std::vector<float> want;
    for (int64_t v : values_i64(g[0])) want.push_back(static_cast<float>(v));
    EXPECT_EQ(values_f32(f[0]), want) << c.eq;
  }
  // The generic loop itself, checked by hand for the one-sided sum: sum(a) * b.
  auto g = run_ok(einsum_node("ij,k->k", 2), {i64({1, 2}, {3, 4}), i64({2}, {1, -2})});
  EXPECT_EQ(values_i64(g[0]), (std::vector<int64_t>{7, -14}));
}

TEST(Einsum, InferWithDynamicDims) {
  auto r = infer_infos(einsum_node("bij,bjk->bik", 2),
                       {known(DataType::kFloat32, {-1, 3, -1}), known(DataType::kFloat32, {2, 4, 5})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{2, 3, 5}));
  r = infer_infos(einsum_node("...ij->...ji", 1), {known(DataType::kFloat32, {-1, 7, 2, 3})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 7, 3, 2}));
}

TEST(Einsum, RejectsMalformedEquations) {
  auto bad = [](const std::string& eq, size_t n, const std::vector<Dims>& dims) {
    std::vector<ops::TensorInfo> in;
    for (const Dims& d : dims) in.push_back(known(DataType::kFloat32, d));
    auto r = infer_infos(einsum_node(eq, n), in);
    EXPECT_FALSE(r.ok()) << eq;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("'" + eq + "'"), std::string::npos) << r.status().message();
    }
  };
  bad("ij,jk->ik", 1, {{2, 2}});          // one term too many
  bad("ij->ik", 1, {{2, 2}});             // k is in no input
  bad("ij->ii", 1, {{2, 2}});             // repeated output index
  bad("i1->i", 1, {{2, 2}});              // not a letter
  bad("i....j->ij", 1, {{2, 2}});         // stray dot
  bad("......->", 1, {{2, 2}});           // two ellipses
  bad("ij->i->j", 1, {{2, 2}});           // two arrows
  bad("ijk->i", 1, {{2, 2}});             // rank mismatch
  bad("ij,jk->ik", 2, {{2, 3}, {4, 5}});  // j is 3 and 4
  bad("ii->i", 1, {{2, 3}});              // diagonal of a non-square matrix
  EXPECT_FALSE(run_status(einsum_node("ij,jk->ik", 2), {f32({1, 2}, {1, 2}), f32({3, 1}, {1, 2, 3})}).ok());
}

}  // namespace
}  // namespace streamrt
