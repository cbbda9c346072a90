// GroupNormalization (opsets 18 and 21) on the CPU against the formula.
#include "norm_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// X [2, 6, 2, 3] in `groups` groups; scale / bias per group (18) or per channel (21).
void check(int opset, int64_t groups) {
  const int64_t n = 2, c = 6, sp = 6, cols = c / groups * sp;
  const auto x = norm_inputs(static_cast<size_t>(n * c * sp), 4, -30.f);
  const int64_t np = opset >= 21 ? c : groups;
  const auto s = norm_inputs(static_cast<size_t>(np), 5), b = norm_inputs(static_cast<size_t>(np), 6);
  auto out = run_ok(make_node("GroupNormalization", 3, 1, {{"num_groups", ai(groups)}}, opset),
                    {f32({n, c, 2, 3}, x), f32({np}, s), f32({np}, b)});
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < n * groups; ++r) {
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < cols; ++k) idx.push_back(r * cols + k);
    double mean, var;
    stats(x, idx, &mean, &var);
    for (int64_t i : idx) {
      const int64_t p = opset >= 21 ? (i / sp) % c : r % groups;
      want[i] = (x[i] - mean) / std::sqrt(var + 1e-5) * s[p] + b[p];
    }
  }
  expect_all_near(out[0], want, 1e-4);
}

TEST(GroupNormalizationOp, AgainstFormula) {
  for (int64_t g : {1, 2, 3, 6}) {
    check(18, g);
    check(21, g);
  }
}

TEST(GroupNormalizationOp, Errors) {
  const Tensor x = f32({1, 4, 2}, std::vector<float>(8, 1.f));
  // 18: per-group parameters; 21: per channel.
  EXPECT_FALSE(run_status(make_node("GroupNormalization", 3, 1, {{"num_groups", ai(2)}}, 18),
                          {x, f32({4}, {1, 1, 1, 1}), f32({4}, {0, 0, 0, 0})})
                   .ok());
  EXPECT_TRUE(run_status(make_node("GroupNormalization", 3, 1, {{"num_groups", ai(2)}}, 21),
                         {x, f32({4}, {1, 1, 1, 1}), f32({4}, {0, 0, 0, 0})})
                  .ok());
  EXPECT_FALSE(run_status(make_node("GroupNormalization", 3, 1, {{"num_groups", ai(3)}}, 18),
                          {x, f32({3}, {1, 1, 1}), f32({3}, {0, 0, 0})})
                   .ok());
  EXPECT_FALSE(run_status(make_node("GroupNormalization", 3, 1, {{"num_groups", ai(2)}, {"stash_type", ai(7)}}, 21),
                          {x, f32({4}, {1, 1, 1, 1}), f32({4}, {0, 0, 0, 0})})
                   .ok());
  auto r = infer(make_node("GroupNormalization", 3, 1, {{"num_groups", ai(2)}}, 21),
                 {info(DataType::kFloat32, {-1, 4, -1}), info(DataType::kFloat32, {3}), info(DataType::kFloat32, {3})});
  EXPECT_FALSE(r.status.ok());  // 3 values for 4 channels
  const ops::OpSchema* schema = ops::OpRegistry::global().find("GroupNormalization");
  ASSERT_NE(schema, nullptr);
  ir::Node bad = make_node("GroupNormalization", 3, 1, {{"num_groups", ai(0)}}, 18);
  ops::InferContext ctx(bad, {info(DataType::kFloat32, {1, 4, 2}), absent(), absent()}, 1);
  EXPECT_FALSE(schema->verify(ctx).ok());
}

}  // namespace
}  // namespace streamrt
