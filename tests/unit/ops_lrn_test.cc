// LRN on the CPU against the ONNX formula.
#include "norm_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

void check(int64_t size, float alpha, float beta, float bias) {
  const int64_t n = 2, c = 5, inner = 6;
  const auto x = norm_inputs(static_cast<size_t>(n * c * inner), 8);
  auto out = run_ok(make_node("LRN", 1, 1,
                              {{"size", ai(size)}, {"alpha", ir::Attribute::make_float(alpha)},
                               {"beta", ir::Attribute::make_float(beta)}, {"bias", ir::Attribute::make_float(bias)}},
                              13),
                    {f32({n, c, 2, 3}, x)});
  std::vector<double> want(x.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < inner; ++s) {
        double sq = 0;
        for (int64_t k = ch - (size - 1) / 2; k <= ch + size / 2; ++k)  // floor / ceil of (size - 1) / 2
          if (k >= 0 && k < c) sq += double(x[(b * c + k) * inner + s]) * x[(b * c + k) * inner + s];
        const int64_t i = (b * c + ch) * inner + s;
        want[i] = x[i] / std::pow(bias + alpha / size * sq, beta);
      }
  expect_all_near(out[0], want, 1e-5);
}

TEST(LrnOp, AgainstFormula) {
  check(3, 1e-4f, 0.75f, 1.f);
  check(4, 0.3f, 0.6f, 2.f);  // even size: one more channel after than before
  check(1, 0.5f, 1.f, 0.5f);
  check(9, 0.2f, 0.5f, 1.f);  // wider than C
}

TEST(LrnOp, Errors) {
  const Tensor x = f32({1, 2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(run_status(make_node("LRN", 1, 1, {}, 13), {x}).ok());  // size is required
  EXPECT_FALSE(run_status(make_node("LRN", 1, 1, {{"size", ai(0)}}, 13), {x}).ok());
  EXPECT_FALSE(run_status(make_node("LRN", 1, 1, {{"size", ai(3)}}, 13), {f32({2, 2}, {1, 2, 3, 4})}).ok());
}

}  // namespace
}  // namespace streamrt
