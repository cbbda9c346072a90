#include "compute_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// y = scale * (x - mean) / sqrt(var + eps) + bias, parameter index `slot(i)` for element i.
template <typename Slot>
std::vector<float> naive_bn(const std::vector<float>& x, const std::vector<float>& scale,
                            const std::vector<float>& bias, const std::vector<float>& mean,
                            const std::vector<float>& var, float eps, Slot slot) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    size_t c = slot(i);
    y[i] = static_cast<float>(scale[c] * (double(x[i]) - mean[c]) / std::sqrt(double(var[c]) + eps) + bias[c]);
  }
  return y;
}

struct Params {
  std::vector<float> scale, bias, mean, var;
  explicit Params(int64_t n, uint32_t seed) {
    scale = random_values(n, seed);
    bias = random_values(n, seed + 1);
    mean = random_values(n, seed + 2);
    var = random_values(n, seed + 3);
    for (auto& v : var) v = v + 1.5f;  // positive variances
  }
};

ir::Node bn_node(float eps, int opset = 15, size_t outputs = 1) {
  return make_node("BatchNormalization", 5, outputs, {{"epsilon", float_attr(eps)}}, opset);
}

TEST(BatchNormalization, PerChannelAcrossRanks) {
  for (Dims xd : {Dims{4, 3}, Dims{2, 3, 7}, Dims{2, 3, 4, 5}, Dims{1, 3, 2, 3, 2}}) {
    SCOPED_TRACE(dims_to_string(xd));
    const int64_t c = xd[1], inner = numel(xd) / xd[0] / c;
    auto x = random_values(numel(xd), 3);
    Params p(c, 10);
    auto out = run_ok(bn_node(1e-3f), {f32(xd, x), f32({c}, p.scale), f32({c}, p.bias), f32({c}, p.mean), f32({c}, p.var)});
    EXPECT_EQ(out[0].dims(), xd);
    expect_close(values_f32(out[0]), naive_bn(x, p.scale, p.bias, p.mean, p.var, 1e-3f,
                                              [&](size_t i) { return (i / inner) % c; }));
  }
}

TEST(BatchNormalization, HandComputed) {
  // Default epsilon 1e-5: x=3, mean=1, var=4 -> (3-1)/sqrt(4.00001)*2+1 ~= 2.9999975
  auto node = make_node("BatchNormalization", 5, 1, {}, 9);
  auto out = run_ok(node, {f32({1, 1, 1}, {3}), f32({1}, {2}), f32({1}, {1}), f32({1}, {1}), f32({1}, {4})});
  EXPECT_NEAR(values_f32(out[0])[0], 1 + 2 * 2 / std::sqrt(4.00001), 1e-6);
}

TEST(BatchNormalization, HalfPrecisionAndMixedParameterTypes) {
  const Dims xd = {2, 4, 3, 3};
  Params p(4, 20);
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    auto x = rounded(t, random_values(numel(xd), 5));
    auto sc = rounded(t, p.scale), bi = rounded(t, p.bias);
    // Opset 15 lets mean/var be float32 while X/scale/B are half.
    auto out = run_ok(bn_node(1e-5f), {float_tensor(t, xd, x), float_tensor(t, {4}, sc), float_tensor(t, {4}, bi),
                                       f32({4}, p.mean), f32({4}, p.var)});
    ASSERT_EQ(out[0].dtype(), t);
    expect_close(values_f32(out[0]), naive_bn(x, sc, bi, p.mean, p.var, 1e-5f, [](size_t i) { return (i / 9) % 4; }), t);
  }
}

TEST(BatchNormalization, NonSpatialOpset7) {
  // spatial=0: one parameter per (channel, position) of X.dims[1:].
  const Dims xd = {2, 2, 3};
  auto x = random_values(12, 1);
  Params p(6, 30);
  auto node = make_node("BatchNormalization", 5, 1, {{"spatial", int_attr(0)}}, 7);
  auto out = run_ok(node, {f32(xd, x), f32({2, 3}, p.scale), f32({2, 3}, p.bias), f32({2, 3}, p.mean), f32({2, 3}, p.var)});
  expect_close(values_f32(out[0]), naive_bn(x, p.scale, p.bias, p.mean, p.var, 1e-5f, [](size_t i) { return i % 6; }));
}

TEST(BatchNormalization, TrainingIsUnsupported) {
  const Dims xd = {2, 3, 2};
  Params p(3, 40);
  std::vector<Tensor> ins = {f32(xd, random_values(12, 1)), f32({3}, p.scale), f32({3}, p.bias), f32({3}, p.mean),
                             f32({3}, p.var)};
  auto node = bn_node(1e-5f, 15, 3);
  node.attrs["training_mode"] = int_attr(1);
  auto r = ops::evaluate_on_host(node, ins);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("training_mode"), std::string::npos);
  // Old-opset running-statistics outputs requested.
  r = ops::evaluate_on_host(bn_node(1e-5f, 9, 5), ins);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  // Unused optional outputs are fine.
  node = bn_node(1e-5f, 9, 3);
  node.outputs[1] = node.outputs[2] = ir::kNoValue;
  EXPECT_TRUE(ops::evaluate_on_host(node, ins).ok());
}

TEST(BatchNormalization, RejectsBadParameterShapes) {
  Params p(3, 50);
  auto x = f32({2, 3, 2}, random_values(12, 1));
  auto r = ops::evaluate_on_host(bn_node(1e-5f), {x, f32({2}, {1, 1}), f32({3}, p.bias), f32({3}, p.mean), f32({3}, p.var)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("scale"), std::string::npos) << r.status().message();
  r = ops::evaluate_on_host(bn_node(1e-5f), {x, f32({3}, p.scale), f32({3}, p.bias), f32({3}, p.mean), f32({4}, {1, 1, 1, 1})});
  EXPECT_FALSE(r.ok());
  r = ops::evaluate_on_host(bn_node(1e-5f), {f32({3}, {1, 2, 3}), f32({3}, p.scale), f32({3}, p.bias), f32({3}, p.mean),
                                             f32({3}, p.var)});
  EXPECT_FALSE(r.ok());  // rank 1 X
  auto bad = ops::evaluate_on_host(bn_node(1e-5f), {i64({1, 1}, {1}), i64({1}, {1}), i64({1}, {1}), i64({1}, {1}), i64({1}, {1})});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
}

TEST(BatchNormalization, InferKeepsDynamicDims) {
  auto r = infer_only(bn_node(1e-5f), {{DataType::kFloat16, {-1, 8, -1, -1}}, {DataType::kFloat16, {8}},
                                       {DataType::kFloat16, {8}}, {DataType::kFloat32, {-1}}, {DataType::kFloat32, {8}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 8, -1, -1}));
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat16);
  r = infer_only(bn_node(1e-5f), {{DataType::kFloat32, {}, false}, {DataType::kFloat32, {8}}, {DataType::kFloat32, {8}},
                                  {DataType::kFloat32, {8}}, {DataType::kFloat32, {8}}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
}

}  // namespace
}  // namespace streamrt
