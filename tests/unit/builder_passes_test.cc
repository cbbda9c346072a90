#include <gtest/gtest.h>

#include "builder/fusion.h"
#include "builder/passes.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"

namespace streamrt::builder {
namespace {
using namespace streamrt::testing;

ir::Node node(const std::string& op, std::vector<ir::ValueId> in, std::vector<ir::ValueId> out) {
  ir::Node n;
  n.name = op + std::to_string(out.empty() ? 0 : out[0]);
  n.op_type = op;
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// y = x + (c1 * c2); z = Relu(x) is dead; w = Identity(y) feeds output o = Relu(w).
struct Fixture {
  ir::Graph g;
  ir::ValueId x, c1, c2, m, y, dead, w, o;
  Fixture() {
    x = g.add_value("x", DataType::kFloat32, {2, 3}, true);
    c1 = g.add_value("c1");
    c2 = g.add_value("c2");
    m = g.add_value("m");
    y = g.add_value("y");
    dead = g.add_value("dead");
    w = g.add_value("w");
    o = g.add_value("o");
    g.set_constant(c1, f32({3}, {1, 2, 3}));
    g.set_constant(c2, f32({3}, {10, 10, 10}));
    g.inputs = {x};
    g.outputs = {o};
    g.nodes = {node("Mul", {c1, c2}, {m}), node("Add", {x, m}, {y}), node("Relu", {x}, {dead}),
               node("Identity", {y}, {w}), node("Relu", {w}, {o})};
  }
};

TEST(Passes, FoldsConstantSubgraphs) {
  Fixture f;
  ASSERT_TRUE(ir::infer_shapes(f.g).ok());
  auto folded = fold_constants(f.g);
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ(*folded, 1u);
  ASSERT_TRUE(f.g.is_constant(f.m));
  EXPECT_EQ(values_f32(*f.g.constant(f.m)), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(f.g.nodes.size(), 4u);
  EXPECT_EQ(f.g.value(f.o).dims, (Dims{2, 3}));
}

TEST(Passes, RemovesIdentityAndDeadNodes) {
  Fixture f;
  EXPECT_EQ(remove_identities(f.g), 1u);
  EXPECT_EQ(f.g.nodes.back().inputs[0], f.y);  // Relu now reads y directly
  EXPECT_EQ(remove_dead_code(f.g), 1u);         // Relu(x) -> dead
  for (const auto& n : f.g.nodes) EXPECT_NE(n.outputs[0], f.dead);
  EXPECT_EQ(f.g.nodes.size(), 3u);
}

// A Concat of one input is that input (TorchScript's Concat(Concat(past), new) for a KV cache); one of
// two inputs, and one that writes a graph output, stay.
TEST(Passes, RemovesOneInputConcat) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3}, true), y = g.add_value("y", DataType::kFloat32, {2, 3}, true);
  const ir::ValueId a = g.add_value("a"), b = g.add_value("b"), o = g.add_value("o");
  g.inputs = {x, y};
  g.outputs = {b, o};
  ir::Node one = node("Concat", {x}, {a}), two = node("Concat", {a, y}, {b}), out = node("Concat", {y}, {o});
  for (ir::Node* n : {&one, &two, &out}) n->attrs["axis"] = ir::Attribute::make_int(0);
  g.nodes = {one, two, out};
  EXPECT_EQ(remove_identities(g), 1u);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<ir::ValueId>{x, y}));
  EXPECT_EQ(g.nodes[1].outputs[0], o);
}

TEST(Passes, ShapeOfStaticInputFoldsIntoReshapeTarget) {
  // Reshape(x, Shape(x)) with static x: Shape folds; the reshape stays (it reads x).
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {2, 3}, true);
  auto s = g.add_value("s");
  auto y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes = {node("Shape", {x}, {s}), node("Reshape", {x, s}, {y})};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.ok()) << folded.status().to_string();
  EXPECT_EQ(*folded, 1u);
  ASSERT_TRUE(g.is_constant(s));
  EXPECT_EQ(values_i64(*g.constant(s)), (std::vector<int64_t>{2, 3}));
}

TEST(Passes, DynamicShapeDoesNotFold) {
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {-1, 3}, true);
  auto s = g.add_value("s");
  auto y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes = {node("Shape", {x}, {s}), node("Reshape", {x, s}, {y})};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ(*folded, 0u);
  EXPECT_EQ(g.value(y).dims.size(), 2u);  // rank known, dims only at run time
}

TEST(ShapeInference, ListsEveryUnsupportedOp) {
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {2}, true);
  auto a = g.add_value("a");
  auto b = g.add_value("b");
  g.nodes = {node("FancyOp", {x}, {a}), node("OtherOp", {a}, {b})};
  std::string msg = ir::unsupported_ops(g);
  EXPECT_NE(msg.find("FancyOp (node 'FancyOp1')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("OtherOp (node 'OtherOp2')"), std::string::npos) << msg;
}

// GraphIndex::only_use_with_dead: a fusion may absorb nodes whose outputs other nodes read only when
// those readers die with them (shape arithmetic feeding the absorbed nodes), never when a reader
// stays alive or is a graph output.
TEST(FusionGraphIndex, ReadersThatDieWithTheChainAreAllowedOthersAreNot) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    ir::Graph g;
    const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3}, true);
    const ir::ValueId y = g.add_value("y"), s = g.add_value("s"), z = g.add_value("z"), w = g.add_value("w");
    const ir::ValueId out = g.add_value("out");
    g.inputs = {x};
    g.nodes.push_back(node("Relu", {x}, {y}));        // 0: absorbed
    g.nodes.push_back(node("Shape", {y}, {s}));       // 1: reads an absorbed value
    g.nodes.push_back(node("Reshape", {y, s}, {z}));  // 2: absorbed
    g.nodes.push_back(node("Neg", {z}, {out}));       // 3: the root
    g.outputs = {out};
    if (variant == 1) g.outputs.push_back(s);  // the shape is wanted: it does not die
    if (variant == 2) {                         // a live reader of the shape
      g.nodes.push_back(node("Cast", {s}, {w}));
      g.outputs.push_back(w);
    }
    builder::GraphIndex idx(g);
    EXPECT_FALSE(idx.single_use_chain({0, 2}, 3));
    EXPECT_EQ(idx.only_use_with_dead({0, 2}, 3), variant == 0);
  }
}

}  // namespace
}  // namespace streamrt::builder
