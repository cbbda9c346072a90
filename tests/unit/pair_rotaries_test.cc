// A Rotary step of two rotations (ops/rotary.cc) and the pass that makes them
// (builder/pair_rotaries.cc): a layer's Q and K rotated in one launch.
#include <gtest/gtest.h>

#include <random>

#include "builder/fusion.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"

namespace streamrt::builder {
namespace {
using namespace streamrt::testing;

Tensor random_f32(const Dims& dims, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> v(static_cast<size_t>(dims_numel(dims)));
  for (auto& f : v) f = u(rng);
  return f32(dims, v);
}

ir::Node rotary(std::vector<ir::ValueId> in, std::vector<ir::ValueId> out) {
  ir::Node n;
  n.name = "rot" + std::to_string(out[0]);
  n.op_type = "Rotary";
  n.opset = 1;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

TEST(RotaryOp, TwoRotationsInOneStepEqualTwoSteps) {
  // Q [1, 3, 4, 8] with cos / sin [1, 3, 1, 8]; K laid out [1, 2, 3, 8] with its own [1, 1, 3, 8].
  const Tensor q = random_f32({1, 3, 4, 8}, 1), qc = random_f32({1, 3, 1, 8}, 2), qs = random_f32({1, 3, 1, 8}, 3);
  const Tensor k = random_f32({1, 2, 3, 8}, 4), kc = random_f32({1, 1, 3, 8}, 5), ks = random_f32({1, 1, 3, 8}, 6);
  auto one_q = ops::evaluate_on_host(rotary({0, 1, 2}, {3}), {q, qc, qs});
  auto one_k = ops::evaluate_on_host(rotary({0, 1, 2}, {3}), {k, kc, ks});
  auto both = ops::evaluate_on_host(rotary({0, 1, 2, 3, 4, 5}, {6, 7}), {q, qc, qs, k, kc, ks});
  ASSERT_TRUE(one_q.ok() && one_k.ok()) << one_q.status().to_string() << one_k.status().to_string();
  ASSERT_TRUE(both.ok()) << both.status().to_string();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0].dims(), q.dims());
  EXPECT_EQ((*both)[1].dims(), k.dims());
  EXPECT_EQ((*both)[0].to_float_vector().value(), (*one_q)[0].to_float_vector().value());
  EXPECT_EQ((*both)[1].to_float_vector().value(), (*one_k)[0].to_float_vector().value());
  // The K rotation is not the Q one's: a mix-up of the parts would show.
  EXPECT_NE((*both)[1].to_float_vector().value()[0], (*both)[0].to_float_vector().value()[0]);
}

TEST(RotaryOp, RejectsCountsOtherThanOneOrTwoRotations) {
  const Tensor x = random_f32({1, 8}, 1), c = random_f32({8}, 2), s = random_f32({8}, 3);
  for (auto [ins, outs] : {std::pair<size_t, size_t>{4, 1}, {6, 1}, {3, 2}, {5, 2}}) {
    std::vector<ir::ValueId> in, out;
    std::vector<Tensor> vals;
    for (size_t i = 0; i < ins; ++i) in.push_back(static_cast<ir::ValueId>(i)), vals.push_back(i % 3 == 0 ? x : i % 3 == 1 ? c : s);
    for (size_t i = 0; i < outs; ++i) out.push_back(static_cast<ir::ValueId>(ins + i));
    auto r = ops::evaluate_on_host(rotary(in, out), vals);
    ASSERT_FALSE(r.ok()) << ins << " inputs, " << outs << " outputs";
    EXPECT_NE(r.status().message().find("X2, cos2, sin2"), std::string::npos) << r.status().to_string();
  }
  // A second rotation of another float type is refused too.
  std::vector<Tensor> mixed = {x, c, s, Tensor::from_vector(DataType::kFloat64, {1, 8}, std::vector<double>(8, 1.0)), c, s};
  EXPECT_FALSE(ops::evaluate_on_host(rotary({0, 1, 2, 3, 4, 5}, {6, 7}), mixed).ok());
}

// x -> Rotary -> a, y -> Rotary -> b, with `between` run after the first rotation; outputs a, b.
struct TwoRotations {
  ir::Graph g;
  ir::ValueId x, y, a, b;
};

TwoRotations two_rotations(bool second_reads_first, bool reader_between) {
  TwoRotations t;
  ir::Graph& g = t.g;
  t.x = g.add_value("x", DataType::kFloat32, {1, 3, 4, 8}, true);
  t.y = g.add_value("y", DataType::kFloat32, {1, 3, 4, 8}, true);
  auto c = g.add_value("cos", DataType::kFloat32, {1, 3, 1, 8}, true);
  auto s = g.add_value("sin", DataType::kFloat32, {1, 3, 1, 8}, true);
  t.a = g.add_value("a");
  t.b = g.add_value("b");
  auto n = g.add_value("n");
  g.inputs = {t.x, t.y, c, s};
  g.nodes.push_back(rotary({t.x, c, s}, {t.a}));
  if (reader_between) {
    ir::Node neg;
    neg.name = "neg";
    neg.op_type = "Neg";
    neg.opset = 13;
    neg.inputs = {t.a};
    neg.outputs = {n};
    g.nodes.push_back(neg);
  }
  g.nodes.push_back(rotary({second_reads_first ? t.a : t.y, c, s}, {t.b}));
  g.outputs = {t.a, t.b};
  if (reader_between) g.outputs.push_back(n);
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return t;
}

TEST(PairRotaries, IndependentRotationsShareOneStep) {
  TwoRotations t = two_rotations(false, false);
  ir::Graph g = t.g;
  EXPECT_EQ(pair_rotaries(g), 1u);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Rotary");
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<ir::ValueId>{t.a, t.b}));
  EXPECT_EQ(g.nodes[0].inputs.size(), 6u);
  EXPECT_TRUE(ir::infer_shapes(g).ok());
}

TEST(PairRotaries, LeavesDependentRotationsApart) {
  for (auto [reads, between] : {std::pair{true, false}, std::pair{false, true}}) {
    TwoRotations t = two_rotations(reads, between);
    ir::Graph g = t.g;
    EXPECT_EQ(pair_rotaries(g), 0u) << "second reads first " << reads << ", a reader between " << between;
    EXPECT_EQ(g.nodes.size(), t.g.nodes.size());
  }
}

}  // namespace
}  // namespace streamrt::builder
