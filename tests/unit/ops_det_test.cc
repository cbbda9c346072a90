#include <cmath>

#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node det_node() { return make_node("Det", 1, 1, {}, 11); }

// Laplace (cofactor) expansion: an independent reference for small matrices.
double cofactor_det(const std::vector<double>& a, int64_t m) {
  if (m == 0) return 1;
  if (m == 1) return a[0];
  double d = 0;
  for (int64_t c = 0; c < m; ++c) {
    std::vector<double> minor;
    for (int64_t i = 1; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        if (j != c) minor.push_back(a[i * m + j]);
    d += (c % 2 ? -1 : 1) * a[c] * cofactor_det(minor, m - 1);
  }
  return d;
}

TEST(Det, MatchesCofactorExpansion) {
  // A batch [2, 3] of 4x4 matrices with entries from a fixed pseudo-random sequence.
  const int64_t m = 4, batch = 6;
  std::vector<float> v;
  uint32_t s = 12345;
  for (int64_t i = 0; i < batch * m * m; ++i) {
    s = s * 1103515245u + 12345u;
    v.push_back(static_cast<float>((s >> 16) % 2001) / 1000.f - 1.f);
  }
  auto out = run_ok(det_node(), {f32({2, 3, m, m}, v)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  auto got = values_f32(out[0]);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> a(v.begin() + b * m * m, v.begin() + (b + 1) * m * m);
    EXPECT_NEAR(got[b], cofactor_det(a, m), 1e-5) << "matrix " << b;
  }
}

TEST(Det, PivotingSingularAndEmpty) {
  // Zero leading entry needs a row swap: det [[0, 1], [1, 0]] = -1.
  EXPECT_EQ(values_f32(run_ok(det_node(), {f32({2, 2}, {0, 1, 1, 0})})[0]), (std::vector<float>{-1}));
  // 3x3 permutation with one swap chain plus scaling: det = 2 * 3 * 4 * sign.
  auto out = run_ok(det_node(), {f32({3, 3}, {0, 0, 4, 2, 0, 0, 0, 3, 0})});
  EXPECT_FLOAT_EQ(values_f32(out[0])[0], 24.f);
  EXPECT_EQ(out[0].dims(), (Dims{}));
  // Singular (two equal rows) gives exactly 0.
  out = run_ok(det_node(), {f32({3, 3}, {1, 2, 3, 1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(values_f32(out[0])[0], 0.f);
  // 0x0 matrices: det 1; an empty batch: empty output.
  out = run_ok(det_node(), {f32({2, 0, 0}, {})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 1}));
  out = run_ok(det_node(), {f32({0, 2, 2}, {})});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
  // Half precision in, half out.
  out = run_ok(det_node(), {f16({2, 2}, {3, 1, 2, 4})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_FLOAT_EQ(values_f32(out[0])[0], 10.f);
}

TEST(Det, InferAndErrors) {
  auto r = infer_infos(det_node(), {known(DataType::kFloat32, {-1, 5, 5})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1}));
  EXPECT_FALSE(infer_infos(det_node(), {known(DataType::kFloat32, {2, 3})}).ok());
  EXPECT_FALSE(infer_infos(det_node(), {known(DataType::kFloat32, {3})}).ok());
  EXPECT_FALSE(infer_infos(det_node(), {known(DataType::kInt64, {3, 3})}).ok());
  EXPECT_FALSE(run_status(det_node(), {f32({2, 3}, {1, 2, 3, 4, 5, 6})}).ok());
}

}  // namespace
}  // namespace streamrt
