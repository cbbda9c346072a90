// Views in the lowered memory plan (builder/lowering.cc): a Reshape-family step whose input and
// output are both arena activations shares its input's bytes, the input stays reserved until the
// view's last reader, and the kernels skip the copy. Checked on the plan and by running it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "builder/lowering.h"
#include "cache_test_util.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"

namespace streamrt::builder {
namespace {

using streamrt::testing::f32;
using streamrt::testing::i64;

constexpr int kRows = 4, kCols = 16;
const float kScales[] = {2.f, 3.f, 5.f, 7.f};

// Appends `op`(in) to g, writing a new value `out`; returns it.
ir::ValueId append(ir::Graph& g, const std::string& op, std::vector<ir::ValueId> in, const std::string& out) {
  ir::Node& n = g.nodes.emplace_back();
  n.op_type = op;
  n.name = op + "->" + out;
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = {g.add_value(out)};
  return n.outputs[0];
}

// x -> Neg a -> Reshape r [64]; a -> Mul c1 -> Mul c2 -> Mul c3 -> Mul c4 (the scales above);
// r -> Reshape r2 [4, 16]; y = c4 + r2. a's other reader (c1) comes right away, r's reader at the
// end: the Mul outputs in between would take a's bytes if the view did not keep them reserved.
ir::Graph lifetime_graph() {
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {kRows, kCols}, true);
  auto flat = g.add_value("flat"), square = g.add_value("square");
  g.set_constant(flat, i64({1}, {kRows * kCols}));
  g.set_constant(square, i64({2}, {kRows, kCols}));
  g.inputs = {x};
  const ir::ValueId a = append(g, "Neg", {x}, "a");
  const ir::ValueId r = append(g, "Reshape", {a, flat}, "r");
  ir::ValueId c = a;
  for (int i = 0; i < 4; ++i) {
    auto k = g.add_value("k" + std::to_string(i));
    g.set_constant(k, f32({}, {kScales[i]}));
    c = append(g, "Mul", {c, k}, "c" + std::to_string(i + 1));
  }
  const ir::ValueId r2 = append(g, "Reshape", {r, square}, "r2");
  g.outputs = {append(g, "Add", {c, r2}, "y")};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

// y of lifetime_graph, step by step in float.
std::vector<float> lifetime_reference(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float a = -x[i];
    float c = a;
    for (float k : kScales) c *= k;
    y[i] = c + a;
  }
  return y;
}

plan::PlanData lower(ir::Graph& g, const BuilderConfig& config = {}) {
  std::unordered_map<ir::ValueId, InputProfile> profiles;
  for (ir::ValueId in : g.inputs) {
    const Dims& d = g.value(in).dims;
    profiles[in] = {d, d, d};
  }
  auto plan = lower_to_plan(g, profiles, config, nullptr);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? std::move(plan).value() : plan::PlanData{};
}

const plan::ValueEntry& value_named(const plan::PlanData& p, const std::string& name) {
  for (const auto& v : p.values)
    if (v.name == name) return v;
  ADD_FAILURE() << "no value " << name;
  return p.values.front();
}

bool overlap(const plan::ValueEntry& a, const plan::ValueEntry& b) {
  return a.arena_offset < b.arena_offset + b.arena_size && b.arena_offset < a.arena_offset + a.arena_size;
}

std::vector<float> run_on_cpu(plan::PlanData& p, const std::vector<float>& x) {
  auto bytes = plan::serialize_plan(p);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return {};
  auto engine = streamrt::testing::load_cpu(std::move(bytes).value());
  return engine ? streamrt::testing::run_engine(*engine, x, kRows, kCols, kCols) : std::vector<float>{};
}

TEST(MemoryPlanViews, ReshapeChainSharesItsInputsBytesUntilTheLastReader) {
  ir::Graph g = lifetime_graph();
  plan::PlanData p = lower(g);
  const plan::ValueEntry& a = value_named(p, "a");
  EXPECT_EQ(a.arena_size, uint64_t{kRows * kCols * 4});
  EXPECT_EQ(value_named(p, "r").arena_offset, a.arena_offset);
  EXPECT_EQ(value_named(p, "r2").arena_offset, a.arena_offset);
  for (int i = 1; i <= 4; ++i) {
    const std::string c = "c" + std::to_string(i);
    EXPECT_FALSE(overlap(value_named(p, c), a)) << c << " takes bytes that r2 still needs";
  }
  const std::vector<float> x = streamrt::testing::ramp(kRows * kCols);
  streamrt::testing::expect_near(run_on_cpu(p, x), lifetime_reference(x), 1e-4f);
}

TEST(MemoryPlanViews, DiagnosticSwitchKeepsTheCopies) {
  BuilderConfig c;
  c.passes.view_aliasing = false;
  ir::Graph g = lifetime_graph();
  plan::PlanData p = lower(g, c);
  EXPECT_FALSE(overlap(value_named(p, "r"), value_named(p, "a")));
  const std::vector<float> x = streamrt::testing::ramp(kRows * kCols);
  streamrt::testing::expect_near(run_on_cpu(p, x), lifetime_reference(x), 1e-4f);
}

TEST(MemoryPlanViews, GraphInputsOutputsAndWeightsKeepTheirCopies) {
  // x (graph input) -> Flatten f -> Unsqueeze u [1, 4, 16] -> Squeeze s -> Mul by w, plus
  // Reshape(w) (a weight's view) -> Identity -> y (graph output).
  ir::Graph g;
  auto x = g.add_value("x", DataType::kFloat32, {kRows, kCols}, true);
  auto axes = g.add_value("axes"), w = g.add_value("w"), shape = g.add_value("shape");
  g.set_constant(axes, i64({1}, {0}));
  std::vector<float> wv(kCols);
  for (int j = 0; j < kCols; ++j) wv[j] = 0.5f + 0.25f * j;
  g.set_constant(w, f32({1, kCols}, wv));
  g.set_constant(shape, i64({1}, {kCols}));
  g.inputs = {x};
  const ir::ValueId f = append(g, "Flatten", {x}, "f");
  const ir::ValueId u = append(g, "Unsqueeze", {f, axes}, "u");
  const ir::ValueId m = append(g, "Mul", {append(g, "Squeeze", {u, axes}, "s"), w}, "m");
  const ir::ValueId sum = append(g, "Add", {m, append(g, "Reshape", {w, shape}, "wr")}, "sum");
  g.outputs = {append(g, "Identity", {sum}, "y")};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  plan::PlanData p = lower(g);
  // f copies the graph input; u and s are views of f; wr copies the weight (weights have no
  // arena bytes); y is bound by the user, so the Identity writes it.
  EXPECT_EQ(value_named(p, "u").arena_offset, value_named(p, "f").arena_offset);
  EXPECT_EQ(value_named(p, "s").arena_offset, value_named(p, "f").arena_offset);
  EXPECT_EQ(value_named(p, "x").kind, plan::ValueEntry::Kind::kInput);
  EXPECT_EQ(value_named(p, "y").kind, plan::ValueEntry::Kind::kOutput);
  EXPECT_EQ(value_named(p, "w").kind, plan::ValueEntry::Kind::kWeight);
  const std::vector<float> xv = streamrt::testing::ramp(kRows * kCols);
  std::vector<float> want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) want[i] = xv[i] * wv[i % kCols] + wv[i % kCols];
  streamrt::testing::expect_near(run_on_cpu(p, xv), want, 1e-6f);
}

}  // namespace
}  // namespace streamrt::builder
