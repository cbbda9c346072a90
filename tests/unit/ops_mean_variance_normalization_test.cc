// MeanVarianceNormalization on the CPU against its function body's formula.
#include "norm_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

void check(const std::vector<int64_t>* axes) {
  const Dims dims = {2, 3, 2, 4};
  const auto x = norm_inputs(48, 7, 10.f);
  std::map<std::string, ir::Attribute> attrs;
  std::vector<int64_t> ax = axes ? *axes : std::vector<int64_t>{0, 2, 3};
  if (axes) attrs["axes"] = ais(*axes);
  auto out = run_ok(make_node("MeanVarianceNormalization", 1, 1, attrs, 13), {f32(dims, x)});
  for (int64_t& a : ax) a = a < 0 ? a + 4 : a;
  // Group every element with those agreeing on the kept axes.
  std::vector<double> want(48);
  for (int64_t i = 0; i < 48; ++i) {
    auto key = unravel(i, dims);
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < 48; ++j) {
      auto kj = unravel(j, dims);
      bool same = true;
      for (size_t d = 0; d < 4; ++d)
        if (std::find(ax.begin(), ax.end(), int64_t(d)) == ax.end() && kj[d] != key[d]) same = false;
      if (same) idx.push_back(j);
    }
    double mean, var;
    stats(x, idx, &mean, &var);
    want[i] = (x[i] - mean) / (std::sqrt(var) + 1e-9);
  }
  expect_all_near(out[0], want, 1e-4);
}

TEST(MeanVarianceNormalizationOp, AgainstFormula) {
  check(nullptr);
  for (std::vector<int64_t> a : std::vector<std::vector<int64_t>>{{1, 3}, {-1}, {0, 1, 2, 3}, {2, 0}}) check(&a);
}

TEST(MeanVarianceNormalizationOp, Errors) {
  EXPECT_FALSE(run_status(make_node("MeanVarianceNormalization", 1, 1, {}, 9), {f32({2, 3}, std::vector<float>(6, 1.f))}).ok());
  EXPECT_FALSE(run_status(make_node("MeanVarianceNormalization", 1, 1, {{"axes", ais({1, 1})}}, 9),
                          {f32({2, 3}, std::vector<float>(6, 1.f))})
                   .ok());
}

}  // namespace
}  // namespace streamrt
