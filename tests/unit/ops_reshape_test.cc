#include "ir/shape_inference.h"
#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

Dims reshape_dims(const Dims& in, const std::vector<int64_t>& shape, int64_t allowzero = 0) {
  std::map<std::string, ir::Attribute> attrs;
  if (allowzero) attrs["allowzero"] = ai(allowzero);
  auto out = run_ok(make_node("Reshape", 2, 1, attrs, 14),
                    {pattern(DataType::kFloat32, in), i64({static_cast<int64_t>(shape.size())}, shape)});
  return out.empty() ? Dims{-99} : out[0].dims();
}

TEST(ReshapeOp, CopiesBytesForEveryDtype) {
  for (DataType dt : kAllDTypes) {
    Tensor x = pattern(dt, {2, 3, 4});
    auto out = run_ok(make_node("Reshape", 2), {x, i64({2}, {4, 6})});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dims(), (Dims{4, 6}));
    expect_picked(out[0], x, iota_map(24));
  }
}

// The combinations of the ONNX node tests test_reshape_* (input 2x3x4).
TEST(ReshapeOp, NodeTestCombinations) {
  const Dims in = {2, 3, 4};
  EXPECT_EQ(reshape_dims(in, {4, 2, 3}), (Dims{4, 2, 3}));          // reordered_all_dims
  EXPECT_EQ(reshape_dims(in, {2, 4, 3}), (Dims{2, 4, 3}));          // reordered_last_dims
  EXPECT_EQ(reshape_dims(in, {2, 12}), (Dims{2, 12}));              // reduced_dims
  EXPECT_EQ(reshape_dims(in, {2, 3, 2, 2}), (Dims{2, 3, 2, 2}));    // extended_dims
  EXPECT_EQ(reshape_dims(in, {24}), (Dims{24}));                    // one_dim
  EXPECT_EQ(reshape_dims(in, {2, -1, 2}), (Dims{2, 6, 2}));         // negative_dim
  EXPECT_EQ(reshape_dims(in, {-1, 2, 3, 4}), (Dims{1, 2, 3, 4}));   // negative_extended_dims
  EXPECT_EQ(reshape_dims(in, {2, 0, 4, 1}), (Dims{2, 3, 4, 1}));    // zero_dim
  EXPECT_EQ(reshape_dims(in, {2, 0, 1, -1}), (Dims{2, 3, 1, 4}));   // zero_and_negative_dim
  EXPECT_EQ(reshape_dims({0, 3, 4}, {3, 4, 0}, 1), (Dims{3, 4, 0}));  // allowzero_reordered
  EXPECT_EQ(reshape_dims({2, 0}, {0, 5}, 1), (Dims{0, 5}));
}

TEST(ReshapeOp, Opset1ShapeAttribute) {
  auto out = run_ok(make_node("Reshape", 1, 1, {{"shape", ais({3, -1})}}, 1), {pattern(DataType::kInt8, {2, 3})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 2}));
}

TEST(ReshapeOp, RejectsBadTargets) {
  auto bad = [](const Dims& in, const std::vector<int64_t>& shape, int64_t allowzero = 0) {
    std::map<std::string, ir::Attribute> attrs{{"allowzero", ai(allowzero)}};
    return run_status(make_node("Reshape", 2, 1, attrs, 14),
                      {pattern(DataType::kFloat32, in), i64({static_cast<int64_t>(shape.size())}, shape)});
  };
  EXPECT_FALSE(bad({2, 3}, {4, 2}).ok());        // element count differs
  EXPECT_FALSE(bad({2, 3}, {-1, -1}).ok());      // two -1
  EXPECT_FALSE(bad({2, 3}, {-2, 3}).ok());       // below -1
  EXPECT_FALSE(bad({2, 3}, {4, -1}).ok());       // 6 not divisible by 4
  EXPECT_FALSE(bad({2, 3}, {0, 0, 0}).ok());     // 0 copies a dim the input lacks
  EXPECT_FALSE(bad({0, 3}, {0, -1}, 1).ok());    // allowzero with both 0 and -1
  EXPECT_FALSE(bad({0, 3}, {0, -1}).ok());       // -1 is ambiguous with 0 elements
  Status st = bad({2, 3}, {4, 2});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("Reshape"), std::string::npos) << st.message();
  // A float shape tensor is refused.
  EXPECT_FALSE(run_status(make_node("Reshape", 2), {f32({2}, {1, 2}), f32({1}, {2})}).ok());
}

TEST(ReshapeOp, InferDynamicDims) {
  auto node = make_node("Reshape", 2);
  Tensor shape = i64({3}, {0, 0, -1});
  // Dynamic dims copied by 0 cancel out, so -1 is still computed: (B, S, 12, 64) -> (B, S, 768).
  auto r = infer(node, {info(DataType::kFloat16, {-1, -1, 12, 64}), known(shape)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, 768}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kFloat16);
  // A dynamic dim that is not copied leaves -1 unknown.
  Tensor shape2 = i64({2}, {-1, 64});
  r = infer(node, {info(DataType::kFloat32, {-1, 12, 64}), known(shape2)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 64}));
  // Unknown shape value: rank from the shape tensor's length.
  r = infer(node, {info(DataType::kFloat32, {2, 3}), info(DataType::kInt64, {4})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, -1, -1}));
  // ... and unranked when that length is unknown too.
  r = infer(node, {info(DataType::kFloat32, {2, 3}), info(DataType::kInt64, {-1})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
  // Unranked data with a known shape: 0 copies an unknown dim.
  Tensor shape3 = i64({3}, {0, 4, -1});
  r = infer(node, {unranked(DataType::kFloat32), known(shape3)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 4, -1}));
  // Static dims are still checked with dynamic inputs when the dynamic ones cancel.
  Tensor shape4 = i64({2}, {0, 5});
  r = infer(node, {info(DataType::kFloat32, {-1, 6}), known(shape4)});
  EXPECT_FALSE(r.status.ok());
}

TEST(FlattenOp, AllAxes) {
  const Dims in = {2, 3, 4, 5};
  const std::vector<std::pair<int64_t, Dims>> cases = {
      {0, {1, 120}}, {1, {2, 60}}, {2, {6, 20}}, {3, {24, 5}}, {4, {120, 1}},
      {-1, {24, 5}}, {-2, {6, 20}}, {-3, {2, 60}}, {-4, {1, 120}}};
  for (DataType dt : kAllDTypes) {
    Tensor x = pattern(dt, in);
    for (const auto& [axis, expect] : cases) {
      auto out = run_ok(make_node("Flatten", 1, 1, {{"axis", ai(axis)}}, 13), {x});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dims(), expect) << "axis " << axis;
      expect_picked(out[0], x, iota_map(120));
    }
  }
  // Default axis is 1.
  EXPECT_EQ(run_ok(make_node("Flatten", 1), {pattern(DataType::kFloat32, in)})[0].dims(), (Dims{2, 60}));
}

TEST(FlattenOp, InferAndErrors) {
  auto r = infer(make_node("Flatten", 1, 1, {{"axis", ai(2)}}), {info(DataType::kFloat32, {-1, 3, 4, 5})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 20}));
  r = infer(make_node("Flatten", 1, 1, {{"axis", ai(1)}}), {info(DataType::kFloat32, {-1, 0, 4})});
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 0}));
  r = infer(make_node("Flatten", 1, 1, {{"axis", ai(0)}}), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{1, -1}));
  EXPECT_FALSE(run_status(make_node("Flatten", 1, 1, {{"axis", ai(5)}}), {pattern(DataType::kFloat32, {2, 3, 4, 5})}).ok());
  EXPECT_FALSE(run_status(make_node("Flatten", 1, 1, {{"axis", ai(-5)}}), {pattern(DataType::kFloat32, {2, 3, 4, 5})}).ok());
}

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape: with static input dims the target is
// known at build time, so the driver gives Reshape's output static dims.
TEST(ReshapeOp, ShapeChainIsKnownAtBuildTime) {
  ir::Graph g;
  ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3, 4}, true);
  g.inputs.push_back(x);
  ir::ValueId shp = g.add_value("shp");
  ir::ValueId idx = g.add_value("idx");
  g.set_constant(idx, i64({}, {0}));
  ir::ValueId d0 = g.add_value("d0");
  ir::ValueId axes = g.add_value("axes");
  g.set_constant(axes, i64({1}, {0}));
  ir::ValueId d0v = g.add_value("d0v");
  ir::ValueId minus1 = g.add_value("minus1");
  g.set_constant(minus1, i64({1}, {-1}));
  ir::ValueId target = g.add_value("target");
  ir::ValueId y = g.add_value("y");
  g.outputs.push_back(y);
  auto add = [&](const std::string& op, std::vector<ir::ValueId> in, ir::ValueId out,
                 std::map<std::string, ir::Attribute> attrs = {}) { add_node(g, op, std::move(in), {out}, std::move(attrs)); };
  add("Shape", {x}, shp);
  add("Gather", {shp, idx}, d0);
  add("Unsqueeze", {d0, axes}, d0v);
  add("Concat", {d0v, minus1}, target, {{"axis", ai(0)}});
  add("Reshape", {x, target}, y);
  auto r = ir::infer_shapes(g);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(g.value(y).dims, (Dims{2, 12}));
  ASSERT_TRUE(r->values[target].has_value());
  EXPECT_EQ(values_i64(*r->values[target]), (std::vector<int64_t>{2, -1}));
}

}  // namespace
}  // namespace streamrt

namespace streamrt {
namespace {
using namespace testing;

// Absurd values from a malformed model give a Status, not signed overflow.
TEST(ShapeOpsOverflow, HugeValuesAreErrors) {
  Tensor x = pattern(DataType::kFloat32, {2, 3});
  EXPECT_FALSE(run_status(make_node("Reshape", 2), {x, i64({2}, {INT64_MAX, 4})}).ok());
  EXPECT_FALSE(run_status(make_node("Tile", 2), {x, i64({2}, {INT64_MAX, 2})}).ok());
  EXPECT_FALSE(run_status(make_node("Pad", 2), {x, i64({4}, {INT64_MAX, 0, 1, 0})}).ok());
  EXPECT_FALSE(run_status(make_node("Split", 2, 2, {}, 13), {x, i64({2}, {INT64_MAX, 2})}).ok());
  EXPECT_FALSE(run_status(make_node("DepthToSpace", 1, 1, {{"blocksize", ai(INT64_MAX)}}),
                          {pattern(DataType::kFloat32, {1, 4, 1, 1})}).ok());
  auto r = infer(make_node("Concat", 2, 1, {{"axis", ai(0)}}),
                 {info(DataType::kFloat32, {INT64_MAX}), info(DataType::kFloat32, {2})});
  EXPECT_FALSE(r.status.ok());
  r = infer(make_node("Flatten", 1), {info(DataType::kFloat32, {2, INT64_MAX, 4})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{2, -1}));
}

}  // namespace
}  // namespace streamrt
