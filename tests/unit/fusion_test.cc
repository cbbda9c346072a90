#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "builder/fusion.h"
#include "core/float16.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"

namespace streamrt::builder {
namespace {
using namespace streamrt::testing;

ir::Node node(const std::string& op, std::vector<ir::ValueId> in, std::vector<ir::ValueId> out,
              std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = op + std::to_string(out[0]);
  n.op_type = op;
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  return n;
}

enum class Form { kDiv, kReciprocal, kOneOver };

ir::Graph rms_graph(Form form, bool with_scale) {
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {2, 3, 8}, true);
  auto two = g.add_value("two"), eps = g.add_value("eps"), one = g.add_value("one"), w = g.add_value("w");
  g.set_constant(two, f32({}, {2.f}));
  g.set_constant(eps, f32({}, {1e-6f}));
  g.set_constant(one, f32({}, {1.f}));
  std::vector<float> wv(8);
  for (int i = 0; i < 8; ++i) wv[i] = 0.5f + 0.1f * i;
  g.set_constant(w, f32({8}, wv));
  auto sq = g.add_value("sq"), mean = g.add_value("mean"), add = g.add_value("add"), rt = g.add_value("rt");
  auto r = g.add_value("r"), y = g.add_value("y"), out = g.add_value("out");
  g.inputs = {x};
  g.nodes = {node("Pow", {x, two}, {sq}),
             node("ReduceMean", {sq}, {mean}, {{"axes", ir::Attribute::make_ints({-1})}}),
             node("Add", {mean, eps}, {add}), node("Sqrt", {add}, {rt})};
  if (form == Form::kDiv) {
    g.nodes.push_back(node("Div", {x, rt}, {y}));
  } else {
    g.nodes.push_back(form == Form::kReciprocal ? node("Reciprocal", {rt}, {r}) : node("Div", {one, rt}, {r}));
    g.nodes.push_back(node("Mul", {x, r}, {y}));
  }
  if (with_scale) {
    g.nodes.push_back(node("Mul", {y, w}, {out}));
    g.outputs = {out};
  } else {
    g.outputs = {y};
  }
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

// n values drawn from N(0, 2) with `seed`.
std::vector<float> normal_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

class RmsFusion : public ::testing::TestWithParam<std::tuple<Form, bool>> {};

TEST_P(RmsFusion, FusesToOneNodeWithSameResult) {
  auto [form, with_scale] = GetParam();
  ir::Graph g = rms_graph(form, with_scale);
  Tensor x = f32({2, 3, 8}, normal_values(48, 3));
  Tensor want = interpret_graph(g, x);
  EXPECT_EQ(fuse_rms_norm(g), 1u);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "RMSNormalization");
  EXPECT_EQ(g.nodes[0].inputs.size(), with_scale ? 2u : 1u);
  Tensor got = interpret_graph(g, x);
  auto a = values_f32(got), b = values_f32(want);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f * (1 + std::fabs(b[i])));
}

INSTANTIATE_TEST_SUITE_P(Forms, RmsFusion,
                         ::testing::Combine(::testing::Values(Form::kDiv, Form::kReciprocal, Form::kOneOver),
                                            ::testing::Bool()));

Tensor f16(const Dims& dims, const std::vector<float>& v) {
  std::vector<uint16_t> bits(v.size());
  floats_to_half(v.data(), bits.data(), v.size());
  return Tensor::from_bytes(DataType::kFloat16, dims, bits.data(), bits.size() * 2).value();
}

// transformers' RMSNorm in a float16 export: x.to(float32), rsqrt(mean(x^2) + eps) in float32,
// .to(float16), then weight * it. `residual_reads_x32`: the float32 x also feeds an Add (then
// the Casts must stay).
ir::Graph half_rms_graph(bool residual_reads_x32) {
  ir::Graph g;
  auto h = g.add_value("h", DataType::kFloat16, {2, 3, 8}, true);
  auto two = g.add_value("two"), eps = g.add_value("eps"), w = g.add_value("w");
  g.set_constant(two, f32({}, {2.f}));
  g.set_constant(eps, f32({}, {1e-6f}));
  std::vector<float> wv(8);
  for (int i = 0; i < 8; ++i) wv[i] = 0.5f + 0.1f * i;
  g.set_constant(w, f16({8}, wv));
  auto x = g.add_value("x"), sq = g.add_value("sq"), mean = g.add_value("mean"), add = g.add_value("add");
  auto rt = g.add_value("rt"), r = g.add_value("r"), y = g.add_value("y"), y16 = g.add_value("y16"), out = g.add_value("out");
  g.inputs = {h};
  g.nodes = {node("Cast", {h}, {x}, {{"to", ir::Attribute::make_int(1)}}),
             node("Pow", {x, two}, {sq}),
             node("ReduceMean", {sq}, {mean}, {{"axes", ir::Attribute::make_ints({-1})}}),
             node("Add", {mean, eps}, {add}), node("Sqrt", {add}, {rt}), node("Reciprocal", {rt}, {r}),
             node("Mul", {x, r}, {y}), node("Cast", {y}, {y16}, {{"to", ir::Attribute::make_int(10)}}),
             node("Mul", {w, y16}, {out})};
  g.outputs = {out};
  if (residual_reads_x32) {
    auto res = g.add_value("res");
    g.nodes.push_back(node("Add", {x, x}, {res}));
    g.outputs.push_back(res);
  }
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

TEST(RmsFusion, HalfPrecisionExportLosesItsCastsAndTakesTheWeight) {
  ir::Graph g = half_rms_graph(false);
  Tensor x = f16({2, 3, 8}, normal_values(48, 5));
  Tensor want = interpret_graph(g, x);
  EXPECT_EQ(fuse_rms_norm(g), 1u);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "RMSNormalization");
  ASSERT_EQ(g.nodes[0].inputs.size(), 2u);
  EXPECT_EQ(g.value(g.nodes[0].inputs[0]).name, "h");
  EXPECT_EQ(g.value(g.nodes[0].outputs[0]).name, "out");
  Tensor got = interpret_graph(g, x);
  ASSERT_EQ(got.dtype(), DataType::kFloat16);
  auto a = values_f32(got), b = values_f32(want);
  ASSERT_EQ(a.size(), b.size());
  // One float16 rounding instead of two: within two float16 ulps of the exported chain.
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-3f * (1 + std::fabs(b[i])));
}

TEST(RmsFusion, HalfPrecisionCastsStayWhenTheFloatInputHasOtherReaders) {
  ir::Graph g = half_rms_graph(true);
  EXPECT_EQ(fuse_rms_norm(g), 1u);
  int casts = 0;
  for (const auto& n : g.nodes) casts += n.op_type == "Cast";
  EXPECT_EQ(casts, 2);
}

TEST(RmsFusionNegative, LeavesOtherPatternsAlone) {
  // The mean is also a graph output: fusing would lose it.
  ir::Graph g = rms_graph(Form::kDiv, false);
  g.outputs.push_back(g.find_value("mean"));
  EXPECT_EQ(fuse_rms_norm(g), 0u);
  // Cube instead of square.
  ir::Graph h = rms_graph(Form::kDiv, false);
  h.set_constant(h.find_value("two"), f32({}, {3.f}));
  EXPECT_EQ(fuse_rms_norm(h), 0u);
  // Mean over the first axis, not the last.
  ir::Graph k = rms_graph(Form::kDiv, false);
  k.nodes[1].attrs["axes"] = ir::Attribute::make_ints({0});
  EXPECT_EQ(fuse_rms_norm(k), 0u);
}

// GELU as exporters write it: 0.5 * x * (1 + erf(x / sqrt(2))), x read twice.
ir::Graph gelu_graph(bool expose_inner) {
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {2, 5}, true);
  auto s2 = g.add_value("s2"), one = g.add_value("one"), half = g.add_value("half");
  g.set_constant(s2, f32({}, {1.4142135f}));
  g.set_constant(one, f32({}, {1.f}));
  g.set_constant(half, f32({}, {0.5f}));
  auto d = g.add_value("d"), e = g.add_value("e"), a = g.add_value("a"), m = g.add_value("m"), y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  if (expose_inner) g.outputs.push_back(e);
  g.nodes = {node("Div", {x, s2}, {d}), node("Erf", {d}, {e}), node("Add", {e, one}, {a}), node("Mul", {x, a}, {m}),
             node("Mul", {m, half}, {y})};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

TEST(ElementwiseFusion, GeluChainBecomesOneNode) {
  ir::Graph g = gelu_graph(false);
  std::vector<float> xv;
  for (int i = 0; i < 10; ++i) xv.push_back(-2.f + 0.45f * i);
  Tensor x = f32({2, 5}, xv);
  auto want = values_f32(interpret_graph(g, x));
  EXPECT_EQ(fuse_elementwise(g), 1u);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "FusedElementwise");
  EXPECT_EQ(g.nodes[0].inputs.size(), 4u);  // x and the three constants
  auto got = values_f32(interpret_graph(g, x));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f);
}

TEST(ElementwiseFusion, KeepsResultsOthersRead) {
  ir::Graph g = gelu_graph(true);  // erf's output is also a graph output: it must stay a tensor
  Tensor x = f32({2, 5}, {-2, -1, -0.5f, 0, 0.1f, 0.5f, 1, 1.5f, 2, 3});
  auto want = values_f32(interpret_graph(g, x));
  EXPECT_EQ(fuse_elementwise(g), 2u);  // Div-Erf (writes the exposed value) and Add-Mul-Mul
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].outputs[0], g.find_value("e"));
  const auto& ins = g.nodes[1].inputs;
  EXPECT_NE(std::find(ins.begin(), ins.end(), g.find_value("e")), ins.end());
  auto got = values_f32(interpret_graph(g, x));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f);
}

TEST(ElementwiseFusion, MalformedProgramsAreRejected) {
  ir::Node n = make_node("FusedElementwise", 1, 1, {{"program", ir::Attribute::make_ints({0, 0, 5})}});
  auto r = ops::evaluate_on_host(n, {f32({2}, {1, 2})});
  EXPECT_FALSE(r.ok());  // register 5 does not exist yet
  n.attrs["program"] = ir::Attribute::make_ints({99, 0, 0});
  EXPECT_FALSE(ops::evaluate_on_host(n, {f32({2}, {1, 2})}).ok());
}

// ------------------------------------------------------------------ rotary

enum class RotaryVariant { kPlain, kSwappedOperands, kWrongHalf, kWrongOrder, kHalfUsedTwice };

// Y = X * cos + rotate_half(X) * sin as exporters write it (opset-13 Slice with constant inputs).
ir::Graph rotary_graph(RotaryVariant v) {
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {2, 3, 5, 8}, true);
  auto cos = g.add_value("cos"), sin = g.add_value("sin");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> cv(5 * 8), sv(5 * 8);
  for (auto& f : cv) f = u(rng);
  for (auto& f : sv) f = u(rng);
  g.set_constant(cos, f32({1, 1, 5, 8}, cv));
  g.set_constant(sin, f32({1, 1, 5, 8}, sv));
  auto c = [&](const std::string& name, std::vector<int64_t> vals) {
    auto id = g.add_value(name);
    g.set_constant(id, i64({static_cast<int64_t>(vals.size())}, vals));
    return id;
  };
  const int64_t split = v == RotaryVariant::kWrongHalf ? 3 : 4;
  auto h = c("h", {split}), zero = c("zero", {0}), big = c("big", {std::numeric_limits<int64_t>::max()}),
       last = c("last", {-1});
  auto hi = g.add_value("hi"), neg = g.add_value("neg"), lo = g.add_value("lo"), rot = g.add_value("rot");
  auto xc = g.add_value("xc"), rs = g.add_value("rs"), y = g.add_value("y");
  auto slice = [&](ir::ValueId from, ir::ValueId to, ir::ValueId out) {
    ir::Node n = node("Slice", {x, from, to, last}, {out});
    n.opset = 13;
    return n;
  };
  const bool swapped = v == RotaryVariant::kSwappedOperands;
  g.inputs = {x};
  g.nodes = {slice(h, big, hi), node("Neg", {hi}, {neg}), slice(zero, h, lo),
             node("Concat", {v == RotaryVariant::kWrongOrder ? lo : neg, v == RotaryVariant::kWrongOrder ? neg : lo},
                  {rot}, {{"axis", ir::Attribute::make_int(-1)}}),
             node("Mul", swapped ? std::vector{cos, x} : std::vector{x, cos}, {xc}),
             node("Mul", swapped ? std::vector{sin, rot} : std::vector{rot, sin}, {rs}),
             node("Add", swapped ? std::vector{rs, xc} : std::vector{xc, rs}, {y})};
  g.outputs = {y};
  if (v == RotaryVariant::kHalfUsedTwice) g.outputs.push_back(lo);
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

class RotaryFusion : public ::testing::TestWithParam<RotaryVariant> {};

TEST_P(RotaryFusion, FusesOnlyTheRotateHalfFormAndKeepsTheResult) {
  const RotaryVariant v = GetParam();
  ir::Graph g = rotary_graph(v);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> xv(2 * 3 * 5 * 8);
  for (auto& f : xv) f = u(rng);
  const Tensor x = f32({2, 3, 5, 8}, xv);
  const Tensor want = interpret_graph(g, x);
  const bool fuses = v == RotaryVariant::kPlain || v == RotaryVariant::kSwappedOperands;
  EXPECT_EQ(fuse_rotary(g), fuses ? 1u : 0u);
  if (fuses) {
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].op_type, "Rotary");
    // Independent check of the formula on a few elements: rotate_half by hand.
    const Tensor got = interpret_graph(g, x);
    const auto cv = g.constant(g.nodes[0].inputs[1])->to_float_vector().value();
    const auto sv = g.constant(g.nodes[0].inputs[2])->to_float_vector().value();
    for (int64_t i : {0, 3, 4, 7, 100, 239}) {
      const int64_t j = i % 8, pos = (i / 8) % 5;
      const float r = j < 4 ? -xv[i + 4] : xv[i - 4];
      EXPECT_NEAR(got.data_as<float>()[i], xv[i] * cv[pos * 8 + j] + r * sv[pos * 8 + j], 1e-5) << i;
    }
  }
  const Tensor got = interpret_graph(g, x);
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], 1e-5) << i;
}

INSTANTIATE_TEST_SUITE_P(Variants, RotaryFusion,
                         ::testing::Values(RotaryVariant::kPlain, RotaryVariant::kSwappedOperands,
                                           RotaryVariant::kWrongHalf, RotaryVariant::kWrongOrder,
                                           RotaryVariant::kHalfUsedTwice));

TEST(RotaryOp, RejectsOddLastAxisAndEnlargingBroadcasts) {
  ir::Node n = node("Rotary", {0, 1, 2}, {3});
  n.opset = 1;
  EXPECT_FALSE(ops::evaluate_on_host(n, {f32({1, 3}, {1, 2, 3}), f32({3}, {1, 1, 1}), f32({3}, {0, 0, 0})}).ok());
  EXPECT_FALSE(
      ops::evaluate_on_host(n, {f32({1, 2}, {1, 2}), f32({2, 2}, {1, 1, 1, 1}), f32({2}, {0, 0})}).ok());
  auto ok = ops::evaluate_on_host(n, {f32({1, 2}, {1, 2}), f32({2}, {1, 1}), f32({2}, {1, 1})});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ((*ok)[0].to_float_vector().value(), (std::vector<float>{1 - 2, 2 + 1}));  // [x0 - x1, x1 + x0]
}

}  // namespace
}  // namespace streamrt::builder
