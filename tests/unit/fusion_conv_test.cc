// The conv fusion pass (src/builder/fuse_conv.cc): which Conv / Add / Relu patterns it rewrites
// and which it leaves alone, and that a fused plan computes on the CPU what the unfused plan
// computes (bitwise in float32) — on hand-built blocks and on the fixture models.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "builder/fusion.h"
#include "conv_test_util.h"
#include "onnx/tensor_proto.h"

namespace streamrt {
namespace {

using testing::ConvBlock;
using testing::ConvTail;

const ir::Node* only_node(const ir::Graph& g, const std::string& op) {
  const ir::Node* found = nullptr;
  for (const ir::Node& n : g.nodes)
    if (n.op_type == op) {
      if (found) return nullptr;
      found = &n;
    }
  return found;
}

size_t count_ops(const plan::PlanData& p, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& s : p.steps) n += s.op_type == op;
  return n;
}

std::string tail_name(ConvTail t) {
  switch (t) {
    case ConvTail::kRelu: return "Relu";
    case ConvTail::kAdd: return "Add";
    case ConvTail::kAddSwapped: return "AddSwapped";
    case ConvTail::kAddRelu: return "AddRelu";
    case ConvTail::kAddSwappedRelu: return "AddSwappedRelu";
  }
  return "?";
}

bool has_add(ConvTail t) { return t != ConvTail::kRelu; }
bool has_relu(ConvTail t) { return t == ConvTail::kRelu || t == ConvTail::kAddRelu || t == ConvTail::kAddSwappedRelu; }

void expect_bitwise_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.dims(), b.dims());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0) << "outputs differ";
}

// Builds `g` for the CPU with and without the conv fusion (in `precision`), runs both on the
// same inputs and returns their plans and outputs.
struct FusedAndPlain {
  plan::PlanData fused_plan, plain_plan;
  Tensor fused, plain;
};

FusedAndPlain run_both(const ir::Graph& g, uint32_t seed, DataType precision = DataType::kFloat32) {
  FusedAndPlain r;
  auto fused = testing::build_graph_plan(g, DeviceType::kCpu, true, precision);
  auto plain = testing::build_graph_plan(g, DeviceType::kCpu, false, precision);
  EXPECT_TRUE(fused.ok()) << fused.status().to_string();
  EXPECT_TRUE(plain.ok()) << plain.status().to_string();
  if (!fused.ok() || !plain.ok()) return r;
  r.fused_plan = testing::read_back(*fused);
  r.plain_plan = testing::read_back(*plain);
  const auto in = testing::block_inputs(g, seed);
  auto a = testing::run_graph_plan(DeviceType::kCpu, *fused, in);
  auto b = testing::run_graph_plan(DeviceType::kCpu, *plain, in);
  EXPECT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  if (a.ok() && b.ok()) r.fused = *a, r.plain = *b;
  return r;
}

class ConvFusionTails : public ::testing::TestWithParam<std::tuple<ConvTail, bool>> {};

TEST_P(ConvFusionTails, BecomesOneConvWithTheEpilogue) {
  auto [tail, bias] = GetParam();
  ir::Graph g = testing::conv_block_graph({.bias = bias, .tail = tail});
  const ir::ValueId x = g.find_value("X"), w = g.find_value("W"), r = g.find_value("R"), out = g.find_value("out");
  EXPECT_EQ(builder::fuse_conv(g), 1u);
  ASSERT_EQ(g.nodes.size(), 1u);
  const ir::Node& c = g.nodes[0];
  EXPECT_EQ(c.op_type, "Conv");
  EXPECT_EQ(c.outputs, std::vector<ir::ValueId>{out});
  EXPECT_EQ(c.inputs[0], x);
  EXPECT_EQ(c.inputs[1], w);
  if (has_add(tail)) {
    ASSERT_EQ(c.inputs.size(), 4u);
    EXPECT_EQ(c.inputs[2] == ir::kNoValue, !bias);
    EXPECT_EQ(c.inputs[3], r);
    EXPECT_EQ(c.attr_int(ops::kConvResidualAttr).value(), 1);
  } else {
    EXPECT_EQ(c.inputs.size(), bias ? 3u : 2u);
    EXPECT_FALSE(c.has_attr(ops::kConvResidualAttr));
  }
  EXPECT_EQ(c.has_attr(ops::kConvActivationAttr), has_relu(tail));
  if (has_relu(tail)) {
    EXPECT_EQ(c.attr_string(ops::kConvActivationAttr).value(), "Relu");
  }
  // The rewritten graph still infers, to the same output.
  const Dims want = g.value(out).dims;
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  EXPECT_EQ(g.value(out).dims, want);
  // Running the pass again finds nothing more.
  EXPECT_EQ(builder::fuse_conv(g), 0u);
}

TEST_P(ConvFusionTails, CpuOutputEqualsTheUnfusedPlanBitwise) {
  auto [tail, bias] = GetParam();
  const FusedAndPlain r = run_both(testing::conv_block_graph({.bias = bias, .tail = tail}), 5);
  EXPECT_EQ(r.fused_plan.steps.size(), 1u);
  // Unfused: Conv, then Relu, Add, or Add+Relu as one FusedElementwise.
  EXPECT_EQ(r.plain_plan.steps.size(), 2u);
  expect_bitwise_equal(r.fused, r.plain);
  // The Relu really ran: some outputs are zero, none negative.
  if (has_relu(tail)) {
    const auto v = r.fused.to_float_vector().value();
    EXPECT_GT(std::count(v.begin(), v.end(), 0.f), 0);
    EXPECT_EQ(std::count_if(v.begin(), v.end(), [](float f) { return f < 0.f; }), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(All, ConvFusionTails,
                         ::testing::Combine(::testing::Values(ConvTail::kRelu, ConvTail::kAdd, ConvTail::kAddSwapped,
                                                              ConvTail::kAddRelu, ConvTail::kAddSwappedRelu),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return tail_name(std::get<0>(info.param)) + (std::get<1>(info.param) ? "Bias" : "NoBias");
                         });

TEST(ConvFusion, VariedConvolutionsMatchTheUnfusedPlanBitwise) {
  for (const ConvBlock& b : testing::varied_blocks()) {
    SCOPED_TRACE("X " + dims_to_string(b.x) + " kernel " + dims_to_string(b.kernel));
    const FusedAndPlain r = run_both(testing::conv_block_graph(b), 8);
    EXPECT_EQ(r.fused_plan.steps.size(), 1u);
    expect_bitwise_equal(r.fused, r.plain);
  }
}

// float16 / bfloat16 (the builder's precision conversion after the fusion): the fused kernel
// rounds once where the unfused plan rounds the Conv's output and the Add's, so they agree to
// the type's rounding.
TEST(ConvFusion, HalfPrecisionPlansAgreeWithinRounding) {
  const ir::Graph g = testing::conv_block_graph({.x = {1, 6, 5, 7}, .maps = 6, .tail = ConvTail::kAddRelu});
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    const FusedAndPlain r = run_both(g, 9, t);
    EXPECT_EQ(count_ops(r.fused_plan, "Add") + count_ops(r.fused_plan, "Relu"), 0u);
    const auto va = r.fused.to_float_vector().value(), vb = r.plain.to_float_vector().value();
    ASSERT_EQ(va.size(), vb.size());
    const float tol = t == DataType::kFloat16 ? 4e-3f : 3e-2f;
    for (size_t i = 0; i < va.size(); ++i) ASSERT_NEAR(va[i], vb[i], tol * (1 + std::fabs(vb[i]))) << i;
  }
}

// Two convolutions meeting at an Add (a ResNet block with a projection): one absorbs the Add
// and Relu with the other's output as R, and moves to the Relu's place, after R is computed.
TEST(ConvFusion, ProjectionBlockTakesTheOtherConvAsResidual) {
  ir::Graph g = testing::conv_block_graph({.bias = true, .tail = ConvTail::kRelu});
  // Rebuild: X -> Conv(main) -> Y; X -> Conv(proj, 1x1) -> P; Relu(Add(Y, P)).
  const ir::ValueId x = g.find_value("X"), y = g.find_value("Y"), out = g.find_value("out");
  const ir::ValueId wp = g.add_value("Wp"), p = g.add_value("P"), sum = g.add_value("sum");
  g.set_constant(wp, testing::random_tensor(DataType::kFloat32, {4, 4, 1, 1}, 21, 0.5f));
  ir::Node proj = testing::graph_node("Conv", {x, wp}, {p});
  g.nodes.back() = testing::graph_node("Add", {y, p}, {sum});
  g.nodes.push_back(testing::graph_node("Relu", {sum}, {out}));
  g.nodes.insert(g.nodes.begin() + 1, std::move(proj));  // main conv, proj conv, Add, Relu
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  ir::Graph f = g;
  EXPECT_EQ(builder::fuse_conv(f), 1u);
  ASSERT_EQ(f.nodes.size(), 2u);
  EXPECT_EQ(f.nodes[0].outputs, std::vector<ir::ValueId>{p});  // the projection, unchanged
  EXPECT_EQ(f.nodes[1].inputs.back(), p);                       // the main conv, after it
  EXPECT_EQ(f.nodes[1].outputs, std::vector<ir::ValueId>{out});
  ASSERT_TRUE(f.topo_sort().ok());

  const FusedAndPlain r = run_both(g, 3);
  EXPECT_EQ(r.fused_plan.steps.size(), 2u);
  expect_bitwise_equal(r.fused, r.plain);
}

// ---------------------------------------------------------------------------------------
// What stays unfused

TEST(ConvFusionNegative, BroadcastingResidualIsLeftAlone) {
  ir::Graph g = testing::conv_block_graph({.tail = ConvTail::kAddRelu});
  ir::Value& r = g.value(g.find_value("R"));
  for (Dims d : {Dims{1, 4, 1, 1}, Dims{4, 1, 1}, Dims{1, 4, 6, 6}, Dims{6}}) {
    r.dims = d;
    ir::Graph h = g;
    ASSERT_TRUE(ir::infer_shapes(h).ok()) << dims_to_string(d);
    EXPECT_EQ(builder::fuse_conv(h), 0u) << dims_to_string(d);
    EXPECT_EQ(h.nodes.size(), 3u);
  }
}

TEST(ConvFusionNegative, OutputsReadElsewhereAreLeftAlone) {
  // The conv's output has a second reader.
  ir::Graph g = testing::conv_block_graph({.tail = ConvTail::kRelu});
  const ir::ValueId y = g.find_value("Y");
  const ir::ValueId extra = g.add_value("extra");
  g.nodes.push_back(testing::graph_node("Sigmoid", {y}, {extra}));
  g.outputs.push_back(extra);
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  EXPECT_EQ(builder::fuse_conv(g), 0u);
  // The conv's output is a graph output.
  ir::Graph h = testing::conv_block_graph({.tail = ConvTail::kRelu});
  h.outputs.push_back(h.find_value("Y"));
  EXPECT_EQ(builder::fuse_conv(h), 0u);
  // Add(Y, Y): the conv's output read twice by one node.
  ir::Graph k = testing::conv_block_graph({.tail = ConvTail::kAdd});
  k.nodes[1].inputs = {k.find_value("Y"), k.find_value("Y")};
  EXPECT_EQ(builder::fuse_conv(k), 0u);
}

TEST(ConvFusionNegative, AnAddOutputReadTwiceKeepsItsRelu) {
  ir::Graph g = testing::conv_block_graph({.tail = ConvTail::kAddRelu});
  const ir::ValueId sum = g.find_value("sum");
  g.outputs.push_back(sum);
  EXPECT_EQ(builder::fuse_conv(g), 1u);
  ASSERT_EQ(g.nodes.size(), 2u);
  const ir::Node* c = only_node(g, "Conv");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->outputs, std::vector<ir::ValueId>{sum});
  EXPECT_TRUE(c->has_attr(ops::kConvResidualAttr));
  EXPECT_FALSE(c->has_attr(ops::kConvActivationAttr));
  ASSERT_NE(only_node(g, "Relu"), nullptr);
  EXPECT_EQ(only_node(g, "Relu")->inputs[0], sum);
}

TEST(ConvFusionNegative, TypesMustBeFloatAndAgree) {
  // An integer Conv (not runnable, but the pass must not touch it).
  ir::Graph g = testing::conv_block_graph({.tail = ConvTail::kAddRelu});
  for (ir::Value& v : g.values) v.dtype = DataType::kInt64;
  EXPECT_EQ(builder::fuse_conv(g), 0u);
  // R of another float type.
  ir::Graph h = testing::conv_block_graph({.tail = ConvTail::kAdd});
  h.value(h.find_value("R")).dtype = DataType::kFloat16;
  EXPECT_EQ(builder::fuse_conv(h), 0u);
  // R's shape unknown.
  ir::Graph k = testing::conv_block_graph({.tail = ConvTail::kAdd});
  k.value(k.find_value("R")).has_shape = false;
  EXPECT_EQ(builder::fuse_conv(k), 0u);
}

// BuilderPasses::conv_fusion off: run_fusions leaves the Add and the Relu to element-wise fusion.
TEST(ConvFusionNegative, DiagnosticSwitchTurnsThePassOff) {
  BuilderPasses off;
  off.conv_fusion = false;
  ir::Graph g = testing::conv_block_graph({.tail = ConvTail::kAddRelu});
  builder::run_fusions(g, off);
  const ir::Node* c = only_node(g, "Conv");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->inputs.size(), 3u);  // X, W, B: no residual
  EXPECT_FALSE(c->has_attr(ops::kConvResidualAttr));
  EXPECT_FALSE(c->has_attr(ops::kConvActivationAttr));
  EXPECT_GT(g.nodes.size(), 1u);  // the Add and Relu (fused element-wise or not) stay
  ir::Graph h = testing::conv_block_graph({.tail = ConvTail::kAddRelu});
  builder::run_fusions(h);
  ASSERT_EQ(h.nodes.size(), 1u);
  EXPECT_TRUE(h.nodes[0].has_attr(ops::kConvResidualAttr));
  EXPECT_TRUE(h.nodes[0].has_attr(ops::kConvActivationAttr));
}

// ---------------------------------------------------------------------------------------
// Plans

TEST(ConvFusion, ConvWeightStaysStreamableWithAResidualAndNoBias) {
  const ir::Graph g = testing::conv_block_graph({.x = {1, 16, 6, 6}, .maps = 16, .bias = false, .tail = ConvTail::kAddRelu});
  BuilderConfig c;
  c.weight_streaming = true;
  c.min_streamable_bytes = 1;
  auto bytes = builder::build_plan_from_graph(g, c);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  const plan::PlanData p = testing::read_back(*bytes);
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_EQ(p.steps[0].inputs.size(), 4u);
  EXPECT_LT(p.steps[0].inputs[2], 0);  // the omitted bias
  ASSERT_EQ(p.weights.size(), 1u);
  EXPECT_EQ(p.weights[0].name, "W");
  EXPECT_TRUE(p.weights[0].streamable);
  auto out = testing::run_graph_plan(DeviceType::kCpu, *bytes, testing::block_inputs(g, 2));
  EXPECT_TRUE(out.ok()) << out.status().to_string();
}

// The fixture models with Conv + Relu: the fused plan's output equals the unfused plan's.
class ConvFusionFixtures : public ::testing::TestWithParam<const char*> {};

TEST_P(ConvFusionFixtures, FusedPlanMatchesTheUnfusedOne) {
  const std::string dir = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models/" + GetParam();
  std::string name;
  auto x = onnx_import::load_tensor_pb(dir + "/test_data_set_0/input_0.pb", &name);
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  auto build = [&](bool fuse) {
    BuilderConfig c;
    c.passes.conv_fusion = fuse;
    c.shapes[name] = x->dims();
    return build_plan_from_onnx(dir + "/model.onnx", c);
  };
  auto fused = build(true), plain = build(false);
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  const plan::PlanData fp = testing::read_back(*fused), pp = testing::read_back(*plain);
  size_t with_relu = 0;
  for (const ir::Node& s : fp.steps) with_relu += s.op_type == "Conv" && s.has_attr(ops::kConvActivationAttr);
  EXPECT_GT(with_relu, 0u);
  EXPECT_EQ(count_ops(pp, "Relu") - count_ops(fp, "Relu"), with_relu);
  const std::map<std::string, Tensor> in = {{name, *x}};
  auto a = testing::run_graph_plan(DeviceType::kCpu, *fused, in);
  auto b = testing::run_graph_plan(DeviceType::kCpu, *plain, in);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  expect_bitwise_equal(*a, *b);
}

INSTANTIATE_TEST_SUITE_P(Models, ConvFusionFixtures, ::testing::Values("squeezenet1_1", "lenet_bn"));

}  // namespace
}  // namespace streamrt
