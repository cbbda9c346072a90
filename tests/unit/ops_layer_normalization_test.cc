#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

struct LnRef {
  std::vector<double> y, mean, inv_std;
};

// Naive reference: rows = prod(dims[:axis]); scale / bias indexed by the trailing coordinates
// (their shape equals dims[axis:]) or absent.
LnRef layer_norm_ref(const std::vector<float>& x, const Dims& dims, int64_t axis,
                     const std::vector<float>& scale, const std::vector<float>& bias, double eps) {
  int64_t cols = 1;
  for (size_t d = static_cast<size_t>(axis); d < dims.size(); ++d) cols *= dims[d];
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  LnRef r;
  for (int64_t i = 0; i < rows; ++i) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < cols; ++c) m += x[i * cols + c];
    m /= cols;
    for (int64_t c = 0; c < cols; ++c) v += (x[i * cols + c] - m) * (x[i * cols + c] - m);
    v /= cols;
    const double inv = 1.0 / std::sqrt(v + eps);
    r.mean.push_back(m);
    r.inv_std.push_back(inv);
    for (int64_t c = 0; c < cols; ++c)
      r.y.push_back((x[i * cols + c] - m) * inv * scale[c] + (bias.empty() ? 0.0 : bias[c]));
  }
  return r;
}

std::vector<float> wave(size_t n, float phase = 0.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::cos(static_cast<float>(i) * 0.71f + phase) * 2.f + 0.5f;
  return v;
}

ir::Node ln_node(std::map<std::string, ir::Attribute> attrs, size_t num_inputs = 3, size_t num_outputs = 3) {
  return make_node("LayerNormalization", num_inputs, num_outputs, std::move(attrs), 17);
}

TEST(LayerNormalization, DefaultAxisWithBiasAndStatistics) {
  auto x = wave(24), s = wave(4, 1.f), b = wave(4, 2.f);
  auto out = run_ok(ln_node({}), {f32({2, 3, 4}, x), f32({4}, s), f32({4}, b)});
  ASSERT_EQ(out.size(), 3u);
  auto ref = layer_norm_ref(x, {2, 3, 4}, 2, s, b, 1e-5);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3, 4}));
  EXPECT_EQ(out[1].dims(), (Dims{2, 3, 1}));
  EXPECT_EQ(out[2].dims(), (Dims{2, 3, 1}));
  EXPECT_EQ(out[1].dtype(), DataType::kFloat32);
  expect_close(values_f32(out[0]), ref.y);
  expect_close(values_f32(out[1]), ref.mean);
  expect_close(values_f32(out[2]), ref.inv_std);
}

TEST(LayerNormalization, EveryAxisOf3DWithEpsilon) {
  const Dims dims{2, 3, 5};
  auto x = wave(30);
  for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Dims pdims(dims.begin() + a, dims.end());
    const size_t pn = static_cast<size_t>(dims_numel(pdims));
    auto s = wave(pn, 1.f), b = wave(pn, 2.f);
    auto out = run_ok(ln_node({{"axis", attr_i(axis)}, {"epsilon", attr_f(0.1f)}}),
                      {f32(dims, x), f32(pdims, s), f32(pdims, b)});
    ASSERT_EQ(out.size(), 3u) << "axis " << axis;
    auto ref = layer_norm_ref(x, dims, a, s, b, 0.1f);
    expect_close(values_f32(out[0]), ref.y);
    expect_close(values_f32(out[1]), ref.mean);
    expect_close(values_f32(out[2]), ref.inv_std);
    Dims stats = dims;
    for (int64_t d = a; d < 3; ++d) stats[d] = 1;
    EXPECT_EQ(out[1].dims(), stats);
  }
}

TEST(LayerNormalization, WithoutBiasAndOptionalOutputs) {
  auto x = wave(12), s = wave(6, 1.f);
  auto out = run_ok(ln_node({{"axis", attr_i(1)}}, 2, 1), {f32({2, 6}, x), f32({6}, s)});
  ASSERT_EQ(out.size(), 1u);
  expect_close(values_f32(out[0]), layer_norm_ref(x, {2, 6}, 1, s, {}, 1e-5).y);
  // Mean omitted (empty name), InvStdDev requested.
  auto node = ln_node({}, 2, 3);
  node.outputs[1] = ir::kNoValue;
  out = run_ok(node, {f32({2, 6}, x), f32({6}, s)});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[1].empty());
  expect_close(values_f32(out[2]), layer_norm_ref(x, {2, 6}, 1, s, {}, 1e-5).inv_std);
}

TEST(LayerNormalization, ScaleBroadcastsLikeTheFunctionBody) {
  // Scale given as [1, 4] against X [3, 4]: same values as Scale [4].
  auto x = wave(12), s = wave(4, 1.f);
  auto a = run_ok(ln_node({}, 2, 1), {f32({3, 4}, x), f32({1, 4}, s)});
  auto b = run_ok(ln_node({}, 2, 1), {f32({3, 4}, x), f32({4}, s)});
  EXPECT_EQ(values_f32(a[0]), values_f32(b[0]));
  // A scalar bias.
  auto c = run_ok(ln_node({}), {f32({3, 4}, x), f32({4}, s), f32({}, {0.25f})});
  auto ref = layer_norm_ref(x, {3, 4}, 1, s, {0.25f, 0.25f, 0.25f, 0.25f}, 1e-5);
  expect_close(values_f32(c[0]), ref.y);
}

TEST(LayerNormalization, LargeOffsetDoesNotCancel) {
  // Values 1e4 + small: a one-pass E[x^2] - E[x]^2 in float would lose the variance.
  std::vector<float> x{10000.f, 10001.f, 10002.f, 10003.f};
  auto out = run_ok(ln_node({}, 2, 3), {f32({1, 4}, x), f32({4}, {1, 1, 1, 1})});
  auto ref = layer_norm_ref(x, {1, 4}, 1, {1, 1, 1, 1}, {}, 1e-5);
  expect_close(values_f32(out[0]), ref.y, 1e-4, 1e-4);
  expect_close(values_f32(out[2]), ref.inv_std, 1e-4);
}

TEST(LayerNormalization, HalfTypes) {
  auto x = wave(16), s = wave(8, 1.f), b = wave(8, 2.f);
  auto xh = values_f32(f16({2, 8}, x)), sh = values_f32(f16({8}, s)), bh = values_f32(f16({8}, b));
  auto out = run_ok(ln_node({}), {f16({2, 8}, x), f16({8}, s), f16({8}, b)});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(out[1].dtype(), DataType::kFloat32);  // stash_type 1
  auto ref = layer_norm_ref(xh, {2, 8}, 1, sh, bh, 1e-5);
  expect_close(values_f32(out[0]), ref.y, 1e-3, 5e-3);
  expect_close(values_f32(out[1]), ref.mean, 1e-5, 1e-5);
  auto xb = values_f32(bf16({2, 8}, x)), sb = values_f32(bf16({8}, s)), bb = values_f32(bf16({8}, b));
  out = run_ok(ln_node({{"stash_type", attr_i(16)}}), {bf16({2, 8}, x), bf16({8}, s), bf16({8}, b)});
  EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
  EXPECT_EQ(out[1].dtype(), DataType::kBFloat16);
  ref = layer_norm_ref(xb, {2, 8}, 1, sb, bb, 1e-5);
  expect_close(values_f32(out[0]), ref.y, 1e-2, 3e-2);
  expect_close(values_f32(out[2]), ref.inv_std, 1e-2, 2e-2);
}

TEST(LayerNormalization, InferDynamicAndUnranked) {
  auto r = infer_infos(ln_node({}), {known(DataType::kFloat32, {-1, -1, 8}), known(DataType::kFloat32, {8}),
                                     known(DataType::kFloat32, {-1})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, -1, 8}));
  EXPECT_EQ((*r)[1].dims, (Dims{-1, -1, 1}));
  EXPECT_EQ((*r)[2].dims, (Dims{-1, -1, 1}));
  r = infer_infos(ln_node({{"axis", attr_i(1)}}),
                  {known(DataType::kFloat16, {-1, 4, -1}), known(DataType::kFloat16, {4, -1})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat16);
  EXPECT_EQ((*r)[1].dims, (Dims{-1, 1, 1}));
  EXPECT_EQ((*r)[1].dtype, DataType::kFloat32);
  r = infer_infos(ln_node({}), {unranked(DataType::kFloat32), unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  EXPECT_FALSE((*r)[1].has_shape);
  EXPECT_EQ((*r)[2].dtype, DataType::kFloat32);
}

TEST(LayerNormalization, Errors) {
  auto x = f32({2, 4}, wave(8));
  // Scale of the wrong length.
  Status st = run_status(ln_node({}, 2, 1), {x, f32({3}, {1, 1, 1})});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Scale"), std::string::npos) << st.message();
  // Scale of another type.
  EXPECT_FALSE(run_status(ln_node({}, 2, 1), {x, f16({4}, {1, 1, 1, 1})}).ok());
  // Axis out of range.
  EXPECT_FALSE(run_status(ln_node({{"axis", attr_i(2)}}, 2, 1), {x, f32({4}, {1, 1, 1, 1})}).ok());
  EXPECT_FALSE(infer_infos(ln_node({{"axis", attr_i(-3)}}, 2, 1),
                           {known(DataType::kFloat32, {-1, 4}), known(DataType::kFloat32, {4})})
                   .ok());
  // Missing Scale, integer input, unsupported stash type.
  EXPECT_FALSE(run_status(ln_node({}, 1, 1), {x}).ok());
  EXPECT_EQ(run_status(ln_node({}, 2, 1), {i64({2}, {1, 2}), i64({2}, {1, 2})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(ln_node({{"stash_type", attr_i(11)}}, 2, 3), {x, f32({4}, {1, 1, 1, 1})}).code(),
            StatusCode::kUnsupported);
  EXPECT_FALSE(run_status(ln_node({{"epsilon", attr_i(1)}}, 2, 1), {x, f32({4}, {1, 1, 1, 1})}).ok());
}

}  // namespace
}  // namespace streamrt
