// Partly known shape vectors (ops::PartialInts): what shape inference still knows of a shape
// computation over a dynamic dim, and what it buys: Reshape dims fixed by the constant pieces of
// its target, Gather(Shape(x), -1) of a static last dim folded, and the rotate-half Slices of a
// dynamic-sequence Llama export getting constant bounds, so that Rotary fuses.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "builder/fusion.h"
#include "builder/passes.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"

namespace streamrt::builder {
namespace {
using namespace streamrt::testing;

// Appends nodes with one fresh output each; opset 17 (Slice / Unsqueeze take inputs).
struct GraphMaker {
  ir::Graph g;

  ir::ValueId input(const std::string& name, DataType dt, Dims dims) {
    ir::ValueId id = g.add_value(name, dt, std::move(dims), true);
    g.inputs.push_back(id);
    return id;
  }
  ir::ValueId constant(Tensor t) {
    std::string name = "c";
    name += std::to_string(g.values.size());
    ir::ValueId id = g.add_value(name);
    g.set_constant(id, std::move(t));
    return id;
  }
  ir::ValueId ints(std::vector<int64_t> v) { return constant(i64({static_cast<int64_t>(v.size())}, v)); }
  ir::ValueId scalar(int64_t v) { return constant(i64({}, {v})); }
  ir::ValueId op(const std::string& type, std::vector<ir::ValueId> in, std::map<std::string, ir::Attribute> attrs = {}) {
    ir::ValueId out = g.add_value(type + "_out" + std::to_string(g.values.size()));
    add_node(g, type, std::move(in), {out}, std::move(attrs));
    return out;
  }
  // Unsqueeze(Gather(Shape(x), i)): dim i of x as a 1-element shape piece.
  ir::ValueId dim_piece(ir::ValueId x, int64_t i) { return op("Unsqueeze", {op("Gather", {op("Shape", {x}), scalar(i)}), ints({0})}); }
  ir::ValueId concat(std::vector<ir::ValueId> pieces) {
    return op("Concat", std::move(pieces), {{"axis", ir::Attribute::make_int(0)}});
  }
};

Dims inferred_dims(ir::Graph& g, ir::ValueId v) {
  auto r = ir::infer_shapes(g);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return g.value(v).dims;
}

TEST(PartialShape, ShapeOfDynamicTensorKnowsItsStaticDims) {
  GraphMaker m;
  auto x = m.input("x", DataType::kFloat32, {2, -1, 5});
  auto s = m.op("Shape", {x});
  auto last = m.op("Gather", {s, m.scalar(-1)});
  auto tail = m.op("Slice", {s, m.ints({1}), m.ints({3})});
  auto tail32 = m.op("Cast", {tail}, {{"to", ir::Attribute::make_int(6)}});
  auto r = ir::infer_shapes(m.g);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->values[s]);
  ASSERT_TRUE(r->partials[s]);
  EXPECT_EQ(*r->partials[s], (ops::PartialInts{2, std::nullopt, 5}));
  ASSERT_TRUE(r->values[last]);  // every element known: a value
  EXPECT_EQ(values_i64(*r->values[last]), (std::vector<int64_t>{5}));
  ASSERT_TRUE(r->partials[tail]);
  EXPECT_EQ(*r->partials[tail], (ops::PartialInts{std::nullopt, 5}));
  ASSERT_TRUE(r->partials[tail32]);
  EXPECT_EQ(*r->partials[tail32], (ops::PartialInts{std::nullopt, 5}));
}

TEST(PartialShape, GatherOfADynamicDimStaysUnknownAndBadIndexIsAnError) {
  GraphMaker m;
  auto x = m.input("x", DataType::kFloat32, {2, -1});
  auto seq = m.op("Gather", {m.op("Shape", {x}), m.scalar(1)});
  auto r = ir::infer_shapes(m.g);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->values[seq]);
  ASSERT_TRUE(r->partials[seq]);  // one unknown element: a Concat of it still knows its place
  EXPECT_EQ(*r->partials[seq], (ops::PartialInts{std::nullopt}));

  GraphMaker bad;
  auto y = bad.input("y", DataType::kFloat32, {2, -1});
  bad.op("Gather", {bad.op("Shape", {y}), bad.scalar(2)});
  EXPECT_FALSE(ir::infer_shapes(bad.g).ok());
}

// Reshape(x [2, -1, 12], Concat(pieces)) for pieces mixing constants and dims of x.
struct ReshapeCase {
  const char* what;
  std::vector<std::vector<int64_t>> pieces;  // {} = the dynamic dim 1 of x
  int64_t allowzero;
  Dims want;
};

class PartialReshape : public ::testing::TestWithParam<ReshapeCase> {};

TEST_P(PartialReshape, FixesTheDimsTheKnownPiecesGive) {
  const ReshapeCase& c = GetParam();
  GraphMaker m;
  auto x = m.input("x", DataType::kFloat32, {2, -1, 12});
  std::vector<ir::ValueId> pieces;
  for (const auto& p : c.pieces) pieces.push_back(p.empty() ? m.dim_piece(x, 1) : m.ints(p));
  auto y = m.op("Reshape", {x, m.concat(pieces)}, {{"allowzero", ir::Attribute::make_int(c.allowzero)}});
  EXPECT_EQ(inferred_dims(m.g, y), c.want) << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PartialReshape,
    ::testing::Values(ReshapeCase{"constant pieces", {{}, {3}, {4}}, 0, {-1, 3, 4}},
                      ReshapeCase{"0 copies a static input dim", {{0}, {}, {12}}, 0, {2, -1, 12}},
                      ReshapeCase{"0 copies a dynamic input dim", {{0}, {0}, {}}, 0, {2, -1, -1}},
                      ReshapeCase{"no -1 inferred beside an unknown piece", {{}, {-1}}, 0, {-1, -1}},
                      ReshapeCase{"allowzero=1 keeps a 0", {{0}, {}, {12}}, 1, {0, -1, 12}},
                      ReshapeCase{"a 2-element constant piece", {{}, {3, 4}}, 0, {-1, 3, 4}},
                      ReshapeCase{"a 2-element piece and a 0", {{0, 3}, {}}, 0, {2, 3, -1}}));

TEST(PartialShape, MinusOneIsComputedOnceEveryOtherDimIsKnown) {
  // The batch piece comes from the static dim of a dynamic tensor: known, so the -1 resolves.
  GraphMaker m;
  auto x = m.input("x", DataType::kFloat32, {2, 3, 4});
  auto other = m.input("other", DataType::kFloat32, {2, -1});
  auto y = m.op("Reshape", {x, m.concat({m.dim_piece(other, 0), m.ints({-1})})});
  EXPECT_EQ(inferred_dims(m.g, y), (Dims{2, 12}));
}

TEST(PartialShape, PieceThatIsNotConstantGivesADynamicDim) {
  GraphMaker m;
  auto x = m.input("x", DataType::kFloat32, {2, 12});
  auto n = m.input("n", DataType::kInt64, {1});  // a shape piece fed at run time
  auto y = m.op("Reshape", {x, m.concat({n, m.ints({4})})});
  EXPECT_EQ(inferred_dims(m.g, y), (Dims{-1, 4}));
}

TEST(PartialShape, PieceOfDynamicLengthLeavesTheRankUnknown) {
  GraphMaker m;
  auto x = m.input("x", DataType::kFloat32, {2, 12});
  auto n = m.input("n", DataType::kInt64, {-1});
  auto y = m.op("Reshape", {x, m.concat({n, m.ints({4})})});
  ASSERT_TRUE(ir::infer_shapes(m.g).ok());
  EXPECT_FALSE(m.g.value(y).has_shape);
}

TEST(PartialShape, KnownPiecesStillCatchAnImpossibleTarget) {
  // Every piece known (seq's piece comes from a static dim): the element counts are compared.
  GraphMaker m;
  auto x = m.input("x", DataType::kFloat32, {2, 12});
  auto other = m.input("other", DataType::kFloat32, {-1, 5});
  m.op("Reshape", {x, m.concat({m.dim_piece(other, 1), m.ints({4})})});
  EXPECT_FALSE(ir::infer_shapes(m.g).ok());
}

TEST(PartialShape, OverflowingTargetIsAnErrorThatShowsTheUnknownElements) {
  GraphMaker m;
  auto x = m.input("x", DataType::kFloat32, {2, -1});
  const int64_t huge = int64_t{1} << 40;
  m.op("Reshape", {x, m.concat({m.dim_piece(x, 1), m.ints({huge}), m.ints({huge})})});
  auto r = ir::infer_shapes(m.g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shape [?,1099511627776,1099511627776] has too many elements"), std::string::npos)
      << r.status().to_string();
}

// The dynamic-sequence Llama export's query path (bench/streaming/export_llama.py), heads 2,
// head_dim 8: Reshape(x, Concat(batch, seq, 2, 8)) -> Transpose -> rotate_half with Slice bounds
// Unsqueeze(Cast(Cast(Div(Gather(Shape(T), -1), 2)))), times cos / sin, added.
struct LlamaRotary {
  GraphMaker m;
  ir::ValueId x, reshaped, t, half, y;
  std::vector<float> cos, sin;

  LlamaRotary() {
    x = m.input("x", DataType::kFloat32, {1, -1, 16});
    reshaped = m.op("Reshape", {x, m.concat({m.dim_piece(x, 0), m.dim_piece(x, 1), m.ints({2}), m.ints({8})})});
    t = m.op("Transpose", {reshaped}, {{"perm", ir::Attribute::make_ints({0, 2, 1, 3})}});
    auto d = m.op("Gather", {m.op("Shape", {t}), m.scalar(-1)});
    auto to_f = m.op("Cast", {m.op("Div", {d, m.scalar(2)})}, {{"to", ir::Attribute::make_int(1)}});
    auto to_i = m.op("Cast", {to_f}, {{"to", ir::Attribute::make_int(7)}});
    half = m.op("Unsqueeze", {to_i, m.ints({0})});
    auto last = m.ints({-1});
    auto hi = m.op("Slice", {t, half, m.ints({std::numeric_limits<int64_t>::max()}), last});
    auto lo = m.op("Slice", {t, m.ints({0}), half, last});
    auto rot = m.op("Concat", {m.op("Neg", {hi}), lo}, {{"axis", ir::Attribute::make_int(-1)}});
    for (int j = 0; j < 8; ++j) {
      cos.push_back(0.3f + 0.1f * j);
      sin.push_back(0.9f - 0.2f * j);
    }
    auto xc = m.op("Mul", {t, m.constant(f32({8}, cos))});
    auto rs = m.op("Mul", {rot, m.constant(f32({8}, sin))});
    y = m.op("Add", {xc, rs});
    m.g.outputs = {y};
  }
};

TEST(PartialShape, DynamicSequenceRotaryFoldsAndFuses) {
  LlamaRotary l;
  ir::Graph& g = l.m.g;
  EXPECT_EQ(inferred_dims(g, l.reshaped), (Dims{1, -1, 2, 8}));
  EXPECT_EQ(g.value(l.t).dims, (Dims{1, 2, -1, 8}));
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.ok()) << folded.status().to_string();
  ASSERT_TRUE(g.is_constant(l.half));  // head_dim / 2, although the sequence is dynamic
  EXPECT_EQ(values_i64(*g.constant(l.half)), (std::vector<int64_t>{4}));
  remove_dead_code(g);
  EXPECT_EQ(fuse_rotary(g), 1u);
  size_t rotary = 0;
  for (const auto& n : g.nodes) {
    EXPECT_NE(n.op_type, "Neg");
    rotary += n.op_type == "Rotary";
  }
  EXPECT_EQ(rotary, 1u);

  // Same numbers as rotate_half by hand, at two sequence lengths.
  for (int64_t seq : {1, 3}) {
    std::mt19937 rng(static_cast<unsigned>(seq));
    std::uniform_real_distribution<float> u(-2.f, 2.f);
    std::vector<float> xv(static_cast<size_t>(seq * 16));
    for (auto& f : xv) f = u(rng);
    const Tensor got = interpret_graph(g, f32({1, seq, 16}, xv));
    ASSERT_EQ(got.dims(), (Dims{1, 2, seq, 8}));
    const float* py = got.data_as<float>();
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t j = 0; j < 8; ++j) {
          auto xat = [&](int64_t jj) { return xv[static_cast<size_t>(s * 16 + h * 8 + jj)]; };
          const float rot = j < 4 ? -xat(j + 4) : xat(j - 4);
          EXPECT_NEAR(py[(h * seq + s) * 8 + j], xat(j) * l.cos[j] + rot * l.sin[j], 1e-5) << seq << " " << h << " " << s << " " << j;
        }
  }
}

TEST(PartialShape, NoPartialsWhenValuePropagationIsOff) {
  LlamaRotary l;
  ir::InferOptions opts;
  opts.max_propagated_elements = 0;
  auto r = ir::infer_shapes(l.m.g, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->values[l.half]);
  EXPECT_EQ(l.m.g.value(l.reshaped).dims, (Dims{-1, -1, -1, -1}));
}

}  // namespace
}  // namespace streamrt::builder
