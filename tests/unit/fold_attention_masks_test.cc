// fold_attention_masks (builder/fold_attention_masks.cc, mask_forms.cc) on hand-written masks of the
// exporters' shape: And(band of query / key positions, GatherND(Cast(attention_mask), [b, j])) made
// additive by Where(keep, 0, fill). Exactly the causal band, a sliding window and the padding read
// attention_mask[b, j] fold into the op, with the same outputs (fully masked rows included); a mask
// that differs anywhere stays. The real exports are covered by fusion_transformers_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "builder/fusion.h"
#include "builder/mask_forms.h"
#include "builder/passes.h"
#include "compute_test_util.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"

namespace streamrt::builder {
namespace {
using namespace streamrt::testing;

constexpr int64_t kB = 2, kH = 2, kS = 5, kD = 4;
constexpr float kLowest = -std::numeric_limits<float>::max();

struct Variant {
  int64_t upper = 0;                  // keep j - i <= upper (0: causal)
  int64_t lower = -1;                 // and i - j <= lower, when >= 0 (a window of lower + 1 keys)
  bool row_is_batch = true;           // the padding read at attention_mask[b, j] (else row 0)
  bool col_is_key = true;             // ... at column j (else S - 1 - j)
  float zero = 0.f, fill = kLowest;   // Where(keep, zero, fill)
};

struct Built {
  ir::Graph g;
  ir::ValueId y = ir::kNoValue;
};

Built build(const Variant& v) {
  Built b;
  ir::Graph& g = b.g;
  const ir::ValueId q = g.add_value("q", DataType::kFloat32, {kB, kH, kS, kD}, true);
  const ir::ValueId k = g.add_value("k", DataType::kFloat32, {kB, kH, kS, kD}, true);
  const ir::ValueId val = g.add_value("v", DataType::kFloat32, {kB, kH, kS, kD}, true);
  const ir::ValueId am = g.add_value("attention_mask", DataType::kInt64, {kB, kS}, true);
  g.inputs = {q, k, val, am};
  std::vector<uint8_t> band(kS * kS);
  for (int64_t i = 0; i < kS; ++i)
    for (int64_t j = 0; j < kS; ++j) band[i * kS + j] = j - i <= v.upper && (v.lower < 0 || i - j <= v.lower);
  std::vector<int64_t> idx;
  for (int64_t r = 0; r < kB; ++r)
    for (int64_t j = 0; j < kS; ++j) idx.insert(idx.end(), {v.row_is_batch ? r : 0, v.col_is_key ? j : kS - 1 - j});
  const ir::ValueId padded = add_op(g, "GatherND", {add_op(g, "Cast", {am}, {{"to", int_attr(9)}}),  // ONNX bool
                                                 add_constant(g, i64({kB, 1, 1, kS, 2}, idx))});
  const ir::ValueId keep = add_op(g, "And", {add_constant(g, Tensor::from_vector(DataType::kBool, {1, 1, kS, kS}, band)), padded});
  const ir::ValueId mask = add_op(g, "Where", {keep, add_constant(g, f32({}, {v.zero})), add_constant(g, f32({}, {v.fill}))});
  b.y = add_op(g, "Attention", {q, k, val, mask}, {{"scale", float_attr(0.5f)}, {"nan_to_zero", int_attr(1)}});
  g.outputs = {b.y};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return b;
}

// Runs the graph node by node on the CPU kernels with random Q, K, V and a padded attention_mask
// (batch 0 padded on the left by 2: its first queries keep no key under causal).
std::vector<float> run(const ir::Graph& g) {
  std::vector<Tensor> vals(g.values.size());
  for (const auto& [id, t] : g.constants) vals[id] = t;
  uint32_t seed = 3;
  for (ir::ValueId in : g.inputs)
    vals[in] = g.value(in).dtype == DataType::kInt64 ? i64({kB, kS}, {0, 0, 1, 1, 1, 1, 1, 1, 1, 1})
                                                     : f32(g.value(in).dims, random_values(kB * kH * kS * kD, seed++));
  for (const auto& n : g.nodes) {
    std::vector<Tensor> ins;
    for (auto v : n.inputs) ins.push_back(v == ir::kNoValue ? Tensor() : vals[v]);
    auto outs = run_ok(n, ins);
    if (outs.size() != n.outputs.size()) return {};
    for (size_t k = 0; k < n.outputs.size(); ++k) vals[n.outputs[k]] = outs[k];
  }
  return values_f32(vals[g.outputs[0]]);
}

const ir::Node& attention(const ir::Graph& g) {
  for (const auto& n : g.nodes)
    if (n.op_type == "Attention") return n;
  return g.nodes.front();
}

void folds(const Variant& v, bool causal, int64_t window, const char* why) {
  SCOPED_TRACE(why);
  Built b = build(v);
  const std::vector<float> want = run(b.g);
  ASSERT_EQ(fold_attention_masks(b.g), 1u);
  remove_dead_code(b.g);
  ASSERT_TRUE(ir::infer_shapes(b.g).ok());
  ASSERT_EQ(b.g.nodes.size(), 1u);  // the mask's nodes are dead
  const ir::Node& a = attention(b.g);
  ASSERT_EQ(a.inputs.size(), 5u);
  EXPECT_EQ(a.inputs[3], ir::kNoValue);
  EXPECT_EQ(b.g.value(a.inputs[4]).name, "attention_mask");  // the Cast to bool peeled
  EXPECT_EQ(a.attr_int("causal", 0).value(), causal ? 1 : 0);
  EXPECT_EQ(a.attr_int("window", 0).value(), window);
  EXPECT_EQ(a.has_attr("mask_fill"), std::isfinite(v.fill));
  const std::vector<float> got = run(b.g);
  ASSERT_EQ(got.size(), want.size());
  for (size_t e = 0; e < got.size(); ++e) EXPECT_NEAR(got[e], want[e], 1e-6f) << e;
}

void stays(const Variant& v, const char* why) {
  Built b = build(v);
  const size_t n = b.g.nodes.size();
  EXPECT_EQ(fold_attention_masks(b.g), 0u) << why;
  EXPECT_EQ(b.g.nodes.size(), n) << why;
  EXPECT_EQ(attention(b.g).inputs.size(), 4u) << why;
}

TEST(FoldAttentionMasks, CausalPaddingAndWindowBecomeTheOpsOwn) {
  folds({}, true, 0, "causal + left padding, float32's lowest fill: rows without keys average V");
  folds({.fill = -std::numeric_limits<float>::infinity()}, true, 0, "-inf fill: those rows are 0");
  folds({.lower = 1}, true, 2, "a window of 2 keys");
  folds({.upper = kS}, false, 0, "padding only");
}

TEST(FoldAttentionMasks, AnyOtherMaskStays) {
  stays({.upper = 1}, "one key past the diagonal");
  stays({.row_is_batch = false}, "every batch reads row 0");
  stays({.col_is_key = false}, "keys read reversed");
  stays({.fill = -1.f}, "a fill that does not swamp the scores");
  stays({.fill = -1e4f}, "an additive fill above float16's lowest: a fully masked row is no uniform row");
  stays({.zero = 1.f}, "kept keys shifted by 1");
}

TEST(FoldAttentionMasks, AdditiveZerosGo) {
  Built b = build({});
  for (auto& n : b.g.nodes)
    if (n.op_type == "Attention") n.inputs[3] = add_constant(b.g, f32({1, 1, kS, kS}, std::vector<float>(kS * kS, 0.f)));
  remove_dead_code(b.g);
  const std::vector<float> want = run(b.g);
  ASSERT_EQ(fold_attention_masks(b.g), 1u);
  EXPECT_EQ(attention(b.g).inputs.size(), 3u);
  EXPECT_EQ(run(b.g), want);
}

// A static build of a long prompt folds its causal band into a constant of S x S bools: at 4096 tokens
// (16M elements, over the 4M that index constants may have) it still becomes the causal flag.
TEST(FoldAttentionMasks, ALongStaticBandFolds) {
  constexpr int64_t kLong = 4096;
  ir::Graph g;
  std::vector<ir::ValueId> qkv;
  for (const char* name : {"q", "k", "v"}) qkv.push_back(g.add_value(name, DataType::kFloat32, {1, 1, kLong, 8}, true));
  g.inputs = qkv;
  std::vector<uint8_t> band(kLong * kLong);
  for (int64_t i = 0; i < kLong; ++i)
    for (int64_t j = 0; j <= i; ++j) band[i * kLong + j] = 1;
  const ir::ValueId keep = add_constant(g, Tensor::from_vector(DataType::kBool, {1, 1, kLong, kLong}, band));
  const float inf = std::numeric_limits<float>::infinity();
  const ir::ValueId mask = add_op(g, "Where", {keep, add_constant(g, f32({}, {0.f})), add_constant(g, f32({}, {-inf}))});
  g.outputs = {add_op(g, "Attention", {qkv[0], qkv[1], qkv[2], mask})};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  ASSERT_EQ(fold_attention_masks(g), 1u);
  const ir::Node& a = attention(g);
  EXPECT_TRUE(a.inputs.size() < 4 || a.inputs[3] == ir::kNoValue);
  EXPECT_EQ(a.attr_int("causal", 0).value(), 1);
}

// A cache's keys are past + new positions, two dynamic dims (a prefill piece after a cache): the causal
// band's offset Skv - Sq must come out as the past, not 0 (Lin::of kept only the first term, and a
// dynamo Llama export with a dynamic new-token count kept its whole mask chain).
TEST(MaskForms, LinOfASumOfTwoDimsKeepsBoth) {
  const ir::ValueId ids = 3, past = 7;
  SymDim seq{ids, 1}, skv{ids, 1};
  skv.root2 = past, skv.n2 = 2;
  const auto offset = lin_add(Lin::of(skv), Lin::of(seq), -1);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(*offset, Lin::of(SymDim{past, 2}));
  EXPECT_FALSE(offset->is_static());
  SymDim plus_one = skv;
  plus_one.plus = 1;
  EXPECT_EQ(Lin::of(plus_one).c, 1);
  EXPECT_EQ(Lin::of(plus_one).s.size(), 2u);
}

}  // namespace
}  // namespace streamrt::builder
