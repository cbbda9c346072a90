// InstanceNormalization on the CPU against the formula, element by element.
#include "norm_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

TEST(InstanceNormalizationOp, Precomputed) {
  // test_instancenorm_example: X [1, 2, 1, 3], scale [1, 1.5], B [0, 1].
  auto out = run_ok(make_node("InstanceNormalization", 3, 1, {}, 6),
                    {f32({1, 2, 1, 3}, {-1, 0, 1, 2, 3, 4}), f32({2}, {1, 1.5f}), f32({2}, {0, 1})});
  expect_all_near(out[0], {-1.22474, 0., 1.22474, -0.837107, 1., 2.837107}, 1e-5);
}

TEST(InstanceNormalizationOp, AgainstFormula) {
  const Dims dims = {2, 3, 4, 5};
  const auto x = norm_inputs(120, 1, 50.f);  // |mean| >> stddev
  const auto s = norm_inputs(3, 2), b = norm_inputs(3, 3);
  auto out = run_ok(make_node("InstanceNormalization", 3, 1, {{"epsilon", ir::Attribute::make_float(0.01f)}}, 6),
                    {f32(dims, x), f32({3}, s), f32({3}, b)});
  std::vector<double> want(120);
  for (int64_t r = 0; r < 6; ++r) {
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < 20; ++k) idx.push_back(r * 20 + k);
    double mean, var;
    stats(x, idx, &mean, &var);
    for (int64_t i : idx) want[i] = (x[i] - mean) / std::sqrt(var + 0.01) * s[r % 3] + b[r % 3];
  }
  expect_all_near(out[0], want, 1e-4);
}

TEST(InstanceNormalizationOp, Errors) {
  const Tensor x = f32({1, 2, 3}, std::vector<float>(6, 1.f));
  EXPECT_FALSE(run_status(make_node("InstanceNormalization", 3, 1, {}, 6), {x, f32({3}, {1, 1, 1}), f32({2}, {0, 0})}).ok());
  EXPECT_FALSE(run_status(make_node("InstanceNormalization", 3, 1, {}, 6),
                          {f32({2, 3}, std::vector<float>(6, 1.f)), f32({3}, {1, 1, 1}), f32({3}, {0, 0, 0})})
                   .ok());
  auto r = infer(make_node("InstanceNormalization", 3, 1, {}, 6),
                 {info(DataType::kFloat32, {-1, 2, -1}), info(DataType::kFloat32, {2}), info(DataType::kFloat32, {2})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 2, -1}));
}

}  // namespace
}  // namespace streamrt
