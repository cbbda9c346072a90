// The builder's clean-up passes on hand-written graphs: common-subexpression elimination
// (builder/cse.cc) and the local simplifications of builder/simplify.cc. Each rewrite must keep the
// graph's values (checked by running the nodes' CPU kernels before and after) and leave alone what
// it cannot prove. Slices of a normalization's rows move ahead of it (slices_before_norms).
#include <gtest/gtest.h>

#include "builder/passes.h"
#include "ir/shape_inference.h"
#include "compute_test_util.h"
#include "op_test_util.h"

namespace streamrt::builder {
namespace {
using namespace streamrt::testing;

int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op;
  return n;
}

// Runs `pass` on a graph of one input and checks that output 0 keeps its values at input `x`.
template <typename Pass>
void same_values(ir::Graph& g, const Tensor& x, Pass pass, size_t at_least = 1) {
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  const Tensor before = interpret_graph(g, x);
  EXPECT_GE(pass(g), at_least);
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  const Tensor after = interpret_graph(g, x);
  ASSERT_EQ(after.dims(), before.dims());
  EXPECT_EQ(after.to_float_vector().value(), before.to_float_vector().value());
}

Tensor ramp(const Dims& dims) {
  std::vector<float> v(static_cast<size_t>(dims_numel(dims)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.f;
  return f32(dims, v);
}

TEST(Cse, MergesDuplicatesOfDuplicatesAndEqualSmallConstants) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3}, true);
  g.inputs = {x};
  // Two copies of Unsqueeze -> Relu, each with its own axes constant of the same contents.
  const ir::ValueId r1 = add_op(g, "Relu", {add_op(g, "Unsqueeze", {x, add_constant(g, i64({1}, {0}))})});
  const ir::ValueId r2 = add_op(g, "Relu", {add_op(g, "Unsqueeze", {x, add_constant(g, i64({1}, {0}))})});
  g.outputs = {add_op(g, "Add", {r1, r2})};
  same_values(g, ramp({2, 3}), eliminate_common_subexpressions, 2);
  EXPECT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[2].inputs[0], g.nodes[2].inputs[1]);
}

TEST(Cse, CommutativeOpsMatchEitherOrder) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {4}, true);
  g.inputs = {x};
  const ir::ValueId t = add_op(g, "Relu", {x});
  const ir::ValueId sum = add_op(g, "Mul", {add_op(g, "Add", {x, t}), add_op(g, "Add", {t, x})});
  g.outputs = {add_op(g, "Mul", {sum, add_op(g, "Sub", {t, add_op(g, "Sub", {x, t})})})};
  same_values(g, ramp({4}), eliminate_common_subexpressions);
  EXPECT_EQ(count(g, "Add"), 1);
  EXPECT_EQ(count(g, "Sub"), 2);  // not commutative
}

TEST(Cse, KeepsWhatDiffers) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3, 4}, true);
  g.inputs = {x};
  const ir::ValueId s1 = add_op(g, "Softmax", {x}, {{"axis", int_attr(1)}});
  const ir::ValueId s2 = add_op(g, "Softmax", {x}, {{"axis", int_attr(2)}});
  const ir::ValueId r1 = add_op(g, "RandomUniformLike", {x}), r2 = add_op(g, "RandomUniformLike", {x});
  // Float constants stay apart even when equal (weights keep their names for refit).
  const ir::ValueId m1 = add_op(g, "Mul", {x, add_constant(g, f32({1}, {2.f}))});
  const ir::ValueId m2 = add_op(g, "Mul", {x, add_constant(g, f32({1}, {2.f}))});
  const ir::ValueId o1 = add_op(g, "Relu", {s1}), o2 = add_op(g, "Relu", {s1});  // both graph outputs
  g.outputs = {add_op(g, "Sum", {s1, s2, r1, r2, m1, m2}), o1, o2};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  const size_t n = g.nodes.size();
  EXPECT_EQ(eliminate_common_subexpressions(g), 0u);
  EXPECT_EQ(g.nodes.size(), n);
}

TEST(Cse, ShapesOfTensorsWithProvenEqualDimsMerge) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {-1, 3}, true);
  g.inputs = {x};
  const ir::ValueId a = add_op(g, "Relu", {x}), b = add_op(g, "Sigmoid", {x});
  // Each reshaped to its own shape (read through Shape): the two Shapes are one value.
  const ir::ValueId ra = add_op(g, "Reshape", {a, add_op(g, "Shape", {a})});
  const ir::ValueId rb = add_op(g, "Reshape", {b, add_op(g, "Shape", {b})});
  g.outputs = {add_op(g, "Add", {ra, rb})};
  same_values(g, ramp({5, 3}), eliminate_common_subexpressions);
  EXPECT_EQ(count(g, "Shape"), 1);
}

TEST(Simplify, CastPairsFoldOnlyThroughAnExactType) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {4}, true);
  g.inputs = {x};
  // ONNX type numbers: 1 float32, 10 float16, 11 float64.
  auto cast = [&](ir::ValueId v, int64_t to) { return add_op(g, "Cast", {v}, {{"to", int_attr(to)}}); };
  const ir::ValueId wide = cast(cast(x, 11), 1);    // exact: goes
  const ir::ValueId narrow = cast(cast(x, 10), 1);  // rounds: stays
  const ir::ValueId self = cast(x, 1);              // a no-op: goes
  g.outputs = {add_op(g, "Sum", {wide, narrow, self})};
  std::vector<float> v = {1.f, 1.0001f, -3.3f, 65504.5f};
  same_values(g, f32({4}, v), fold_casts);
  EXPECT_EQ(count(g, "Cast"), 2);  // Float32 -> float16 -> float32 only
  EXPECT_EQ(g.nodes.back().inputs[0], x);
  EXPECT_EQ(g.nodes.back().inputs[2], x);
}

TEST(Simplify, TransposePairsComposeAndInversesVanish) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3, 4}, true);
  g.inputs = {x};
  auto tr = [&](ir::ValueId v, std::vector<int64_t> p) { return add_op(g, "Transpose", {v}, {{"perm", ints(std::move(p))}}); };
  const ir::ValueId back = tr(tr(x, {1, 0, 2}), {1, 0, 2});
  const ir::ValueId rotated = tr(tr(x, {1, 2, 0}), {1, 2, 0});
  g.outputs = {add_op(g, "Add", {add_op(g, "Reshape", {back, add_constant(g, i64({1}, {24}))}),
                              add_op(g, "Reshape", {rotated, add_constant(g, i64({1}, {24}))})})};
  same_values(g, ramp({2, 3, 4}), fold_transposes, 2);
  EXPECT_EQ(count(g, "Transpose"), 1);  // [2, 0, 1] in one step
}

TEST(Simplify, ReshapeTargetsFromShapesBecomeConstants) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {-1, -1, 16}, true);
  g.inputs = {x};
  const ir::ValueId shape = add_op(g, "Shape", {x});
  auto dim = [&](int64_t k) {
    return add_op(g, "Unsqueeze", {add_op(g, "Gather", {shape, add_constant(g, i64({}, {k}))}), add_constant(g, i64({1}, {0}))});
  };
  const ir::ValueId target = add_op(g, "Concat", {dim(0), dim(1), add_constant(g, i64({1}, {-1})), add_constant(g, i64({1}, {8}))},
                                 {{"axis", int_attr(0)}});
  const ir::ValueId split = add_op(g, "Reshape", {x, target});
  const ir::ValueId same = add_op(g, "Reshape", {add_op(g, "Relu", {split}), add_op(g, "Shape", {split})});  // a no-op
  g.outputs = {add_op(g, "Sigmoid", {same})};
  same_values(g, ramp({2, 5, 16}), fold_reshape_targets, 2);
  ASSERT_EQ(g.nodes.size(), 3u);  // Reshape, Relu, Sigmoid
  EXPECT_EQ(values_i64(*g.constant(g.nodes[0].inputs[1])), (std::vector<int64_t>{0, 0, -1, 8}));
  EXPECT_EQ(g.nodes[2].inputs[0], g.nodes[1].outputs[0]);
}

TEST(Simplify, ReshapeTargetsStayWhereNotProven) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {-1, -1, 16}, true);
  const ir::ValueId y = g.add_value("y", DataType::kFloat32, {-1, 8}, true);
  g.inputs = {x, y};
  // [y's rows, -1, x's last / 2]... two dims not known from x: no constant can say them.
  const ir::ValueId shape_y = add_op(g, "Shape", {y});
  const ir::ValueId target = add_op(g, "Concat", {shape_y, add_constant(g, i64({1}, {-1}))}, {{"axis", int_attr(0)}});
  g.outputs = {add_op(g, "Reshape", {x, target})};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  EXPECT_EQ(fold_reshape_targets(g), 0u);
  EXPECT_FALSE(g.is_constant(g.nodes.back().inputs[1]));
}

TEST(Simplify, TransposeOfUnitAxesIsAView) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 1, 4, 8}, true);
  g.inputs = {x};
  const ir::ValueId moved = add_op(g, "Transpose", {x}, {{"perm", ints({0, 2, 1, 3})}});
  const ir::ValueId real = add_op(g, "Transpose", {moved}, {{"perm", ints({0, 3, 2, 1})}});  // swaps 4 and 8
  g.outputs = {real};
  same_values(g, ramp({2, 1, 4, 8}), transposes_to_views);
  EXPECT_EQ(count(g, "Reshape"), 1);
  EXPECT_EQ(count(g, "Transpose"), 1);
}

TEST(Simplify, ReshapeChainsReadTheFirstInput) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3, 4}, true);
  g.inputs = {x};
  const ir::ValueId mid = add_op(g, "Reshape", {x, add_constant(g, i64({2}, {6, 4}))});
  g.outputs = {add_op(g, "Reshape", {mid, add_constant(g, i64({3}, {0, 2, 2}))})};  // 0 copies mid's 6, not x's 2
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  EXPECT_EQ(merge_reshapes(g), 0u);
  g.nodes[0].inputs[1] = add_constant(g, i64({2}, {2, 12}));  // now mid's dim 0 is x's
  g.nodes[1].inputs[1] = add_constant(g, i64({3}, {0, 4, 3}));
  same_values(g, ramp({2, 3, 4}), merge_reshapes);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].inputs[0], x);
}

TEST(Simplify, MultiplyingByOneGoes) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3}, true);
  g.inputs = {x};
  const ir::ValueId a = add_op(g, "Mul", {add_constant(g, f32({}, {1.f})), x});
  const ir::ValueId b = add_op(g, "Div", {a, add_constant(g, f32({1, 1}, {1.f}))});
  const ir::ValueId widened = add_op(g, "Mul", {b, add_constant(g, f32({1, 1, 1}, {1.f}))});  // rank 3: stays
  g.outputs = {add_op(g, "Div", {add_constant(g, f32({}, {1.f})), widened})};             // 1 / x: stays
  same_values(g, ramp({2, 3}), drop_unit_scalings, 2);
  EXPECT_EQ(count(g, "Mul"), 1);
  EXPECT_EQ(count(g, "Div"), 1);
}

// x [2, 5, 8] -> RMSNormalization -> Slice(starts, ends, axes) -> MatMul, as a decode export's
// last-token logits read them (without the MatMul where `head` is false: slices of the last axis);
// `extra_reader`: a Relu also reads the norm's output.
ir::Graph sliced_norm(std::vector<int64_t> starts, std::vector<int64_t> axes, bool extra_reader = false,
                      bool head = true) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 5, 8}, true);
  g.inputs = {x};
  std::vector<float> scale(8), w(8 * 3);
  for (size_t i = 0; i < scale.size(); ++i) scale[i] = 0.5f + 0.25f * static_cast<float>(i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) - 2.f;
  const ir::ValueId norm = add_op(g, "RMSNormalization", {x, add_constant(g, f32({8}, scale))});
  std::vector<int64_t> ends(starts.size(), int64_t{1} << 40);
  std::vector<ir::ValueId> in = {norm, add_constant(g, i64({static_cast<int64_t>(starts.size())}, starts)),
                                 add_constant(g, i64({static_cast<int64_t>(ends.size())}, ends))};
  if (!axes.empty()) in.push_back(add_constant(g, i64({static_cast<int64_t>(axes.size())}, axes)));
  const ir::ValueId rows = add_op(g, "Slice", in);
  g.outputs = {head ? add_op(g, "MatMul", {rows, add_constant(g, f32({8, 3}, w))}) : rows};
  if (extra_reader) g.outputs.push_back(add_op(g, "Relu", {norm}));
  return g;
}

TEST(Simplify, SlicesOfRowsMoveAheadOfTheNorm) {
  auto pass = [](ir::Graph& g) { return slices_before_norms(g).value(); };
  for (auto [starts, axes] : {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{-1}, {1}},
                              {{-1}, {-2}}, {{1, 2}, {0, 1}}, {{1, 3}, {}}}) {
    ir::Graph g = sliced_norm(starts, axes);
    same_values(g, ramp({2, 5, 8}), pass);
    ASSERT_EQ(g.nodes.size(), 3u);
    EXPECT_EQ(g.nodes[0].op_type, "Slice");
    EXPECT_EQ(g.nodes[0].inputs[0], g.inputs[0]);
    EXPECT_EQ(g.nodes[1].op_type, "RMSNormalization");
    EXPECT_EQ(g.nodes[1].inputs[0], g.nodes[0].outputs[0]);
    EXPECT_EQ(g.nodes[2].inputs[0], g.nodes[1].outputs[0]);
  }
}

TEST(Simplify, SlicesOfNormalizedAxesOrSharedNormsStay) {
  // The normalized axis itself (-1, 2, or starts covering every axis), or a norm something else reads.
  for (ir::Graph g : {sliced_norm({1}, {-1}, false, false), sliced_norm({1}, {2}, false, false),
                      sliced_norm({0, 1, 2}, {}, false, false), sliced_norm({-1}, {1}, true)}) {
    auto shapes = ir::infer_shapes(g);
    ASSERT_TRUE(shapes.ok()) << shapes.status().to_string();
    EXPECT_EQ(slices_before_norms(g).value(), 0u);
    EXPECT_EQ(g.nodes[0].op_type, "RMSNormalization");
  }
}

TEST(Simplify, SlicesKeepingEveryElementGo) {
  auto slice_of = [](Dims dims, int64_t step) {
    ir::Graph g;
    const ir::ValueId x = g.add_value("x", DataType::kFloat32, dims, true);
    g.inputs = {x};
    const ir::ValueId last = add_op(g, "Slice", {x, add_constant(g, i64({1}, {-1})), add_constant(g, i64({1}, {1 << 30})),
                                                 add_constant(g, i64({1}, {1})), add_constant(g, i64({1}, {step}))});
    g.outputs = {add_op(g, "Relu", {last})};
    return g;
  };
  ir::Graph whole = slice_of({2, 1, 8}, 1);  // a one-token decode step's last token: all of it
  same_values(whole, ramp({2, 1, 8}), drop_whole_slices);
  EXPECT_EQ(count(whole, "Slice"), 0);
  // A real selection, a step other than 1, or dims not known at build time: the Slice stays.
  for (auto [dims, step] : {std::pair<Dims, int64_t>{{2, 5, 8}, 1}, {{2, 1, 8}, 2}, {{2, kDynamicDim, 8}, 1}}) {
    ir::Graph g = slice_of(dims, step);
    ASSERT_TRUE(ir::infer_shapes(g).ok());
    EXPECT_EQ(drop_whole_slices(g), 0u) << dims_to_string(dims) << " step " << step;
    EXPECT_EQ(count(g, "Slice"), 1);
  }
}

}  // namespace
}  // namespace streamrt::builder
