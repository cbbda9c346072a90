// If / Loop / Scan: hand-made graphs built into plans (written, read back and run on the CPU
// engine), the build-time If, and plans whose bodies are corrupt.
#include <gtest/gtest.h>

#include <memory>

#include "builder/build_graph.h"
#include "engine_test_util.h"
#include "op_test_util.h"
#include "ir/subgraph.h"
#include "plan/plan.h"
#include "streamrt/runtime.h"
#include "tactics_test_util.h"

namespace streamrt {
namespace {

using testing::f32;
using testing::i64;
using testing::values_f32;

Tensor boolean(bool v) { return Tensor::from_vector<uint8_t>(DataType::kBool, {1}, {static_cast<uint8_t>(v)}); }

// A body under construction: values by name.
struct Body {
  std::shared_ptr<ir::Graph> g = std::make_shared<ir::Graph>();
  ir::ValueId in(const std::string& name, DataType t, Dims d) {
    ir::ValueId id = g->add_value(name, t, std::move(d), true);
    g->inputs.push_back(id);
    return id;
  }
  ir::ValueId capture(const std::string& name) {
    ++g->num_captures;
    return in(name, DataType::kUndefined, {});
  }
  ir::ValueId v(const std::string& name) { return g->add_value(name); }
  void node(const std::string& op, std::vector<ir::ValueId> ins, std::vector<ir::ValueId> outs,
            std::map<std::string, ir::Attribute> attrs = {}) {
    testing::add_node(*g, op, std::move(ins), std::move(outs), std::move(attrs));
  }
  ir::Attribute attr() const { return ir::Attribute::make_graph(g); }
};

ir::Node make(const std::string& op, std::vector<ir::ValueId> ins, std::vector<ir::ValueId> outs,
              std::map<std::string, ir::Attribute> attrs, int opset = 17) {
  ir::Node n;
  n.name = op + "_node";
  n.op_type = op;
  n.opset = opset;
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  n.attrs = std::move(attrs);
  return n;
}

std::vector<uint8_t> build(const ir::Graph& g) {
  auto bytes = builder::build_plan_from_graph(g, BuilderConfig{});
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

size_t count_steps(const std::vector<uint8_t>& bytes, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& s : testing::read_back(bytes).steps) n += s.op_type == op;
  return n;
}

using testing::run_engine;
Result<std::vector<Tensor>> run(const std::vector<uint8_t>& bytes, const std::map<std::string, Tensor>& inputs) {
  return testing::run_cpu_plan(bytes, inputs);
}

// y = If(c) then x + x (3 elements) else Concat(x, x * x) (6 elements): y's size depends on c.
ir::Graph if_graph(bool cond_constant, bool cond_value = true) {
  ir::Graph g;
  ir::ValueId c = g.add_value("c", DataType::kBool, {1}, true);
  ir::ValueId x = g.add_value("x", DataType::kFloat32, {3}, true);
  ir::ValueId y = g.add_value("y");
  if (cond_constant) g.set_constant(c, boolean(cond_value));
  else g.inputs.push_back(c);
  g.inputs.push_back(x);
  g.outputs = {y};
  Body then_b, else_b;
  ir::ValueId tx = then_b.capture("x"), ty = then_b.v("ty");
  then_b.node("Add", {tx, tx}, {ty});
  then_b.g->outputs = {ty};
  ir::ValueId ex = else_b.capture("x"), sq = else_b.v("sq"), ey = else_b.v("ey");
  else_b.node("Mul", {ex, ex}, {sq});
  else_b.node("Concat", {ex, sq}, {ey}, {{"axis", ir::Attribute::make_int(0)}});
  else_b.g->outputs = {ey};
  g.nodes.push_back(make("If", {c, x}, {y}, {{"then_branch", then_b.attr()}, {"else_branch", else_b.attr()}}));
  return g;
}

TEST(ControlFlow, IfRunsTheBranchItsRuntimeCondPicks) {
  const auto bytes = build(if_graph(false));
  EXPECT_EQ(count_steps(bytes, "If"), 1u);
  const Tensor x = f32({3}, {1, 2, 3});
  auto yes = run(bytes, {{"c", boolean(true)}, {"x", x}});
  ASSERT_TRUE(yes.ok()) << yes.status().to_string();
  EXPECT_EQ(values_f32((*yes)[0]), (std::vector<float>{2, 4, 6}));
  auto no = run(bytes, {{"c", boolean(false)}, {"x", x}});
  ASSERT_TRUE(no.ok()) << no.status().to_string();
  EXPECT_EQ(values_f32((*no)[0]), (std::vector<float>{1, 2, 3, 1, 4, 9}));
}

TEST(ControlFlow, IfWithAConstantCondIsInlinedAtBuild) {
  for (bool cond : {true, false}) {
    const auto bytes = build(if_graph(true, cond));
    EXPECT_EQ(count_steps(bytes, "If"), 0u);
    auto y = run(bytes, {{"x", f32({3}, {1, 2, 3})}});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    const std::vector<float> want = cond ? std::vector<float>{2, 4, 6} : std::vector<float>{1, 2, 3, 1, 4, 9};
    EXPECT_EQ(values_f32((*y)[0]), want);
  }
}

// Loop over s (float [2]) adding the captured x each iteration; scan output: s after each one.
// The body's cond is iter < 2. M and cond are graph inputs when `with_m` / `with_cond`.
ir::Graph loop_graph(bool with_m, bool with_cond) {
  ir::Graph g;
  ir::ValueId m = g.add_value("M", DataType::kInt64, {}, true);
  ir::ValueId c = g.add_value("cond", DataType::kBool, {1}, true);
  ir::ValueId x = g.add_value("x", DataType::kFloat32, {2}, true);
  ir::ValueId s0 = g.add_value("s0", DataType::kFloat32, {2}, true);
  if (with_m) g.inputs.push_back(m);
  if (with_cond) g.inputs.push_back(c);
  g.inputs.push_back(x);
  g.set_constant(s0, f32({2}, {0, 0}));
  ir::ValueId s = g.add_value("s"), scan = g.add_value("scan");
  g.outputs = {s, scan};
  Body b;
  ir::ValueId it = b.in("i", DataType::kInt64, {}), bc = b.in("c_in", DataType::kBool, {}),
              bs = b.in("s_in", DataType::kFloat32, {2});
  ir::ValueId bx = b.capture("x");
  ir::ValueId two = b.v("two"), c_out = b.v("c_out"), s_out = b.v("s_out"), copy = b.v("copy");
  b.g->set_constant(two, i64({}, {2}));
  b.node("Less", {it, two}, {c_out});
  b.node("Add", {bs, bx}, {s_out});
  b.node("Identity", {s_out}, {copy});
  b.g->outputs = {c_out, s_out, copy};
  (void)bc;
  g.nodes.push_back(make("Loop", {with_m ? m : ir::kNoValue, with_cond ? c : ir::kNoValue, s0, x}, {s, scan},
                         {{"body", b.attr()}}));
  return g;
}

void expect_loop(const std::vector<uint8_t>& bytes, std::map<std::string, Tensor> in, int iterations) {
  in["x"] = f32({2}, {1, 10});
  auto r = run(bytes, in);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const float n = static_cast<float>(iterations);
  EXPECT_EQ(values_f32((*r)[0]), (std::vector<float>{n, 10 * n}));
  std::vector<float> scan;
  for (int i = 1; i <= iterations; ++i) scan.insert(scan.end(), {float(i), 10.f * i});
  EXPECT_EQ((*r)[1].dims(), (Dims{iterations, 2}));
  EXPECT_EQ(values_f32((*r)[1]), scan);
}

TEST(ControlFlow, LoopWithTripCountOnlyIgnoresTheBodysCond) {
  const auto bytes = build(loop_graph(true, false));
  expect_loop(bytes, {{"M", i64({}, {5})}}, 5);
  expect_loop(bytes, {{"M", i64({}, {0})}}, 0);
}

TEST(ControlFlow, LoopWithCondOnlyRunsWhileItHolds) {
  const auto bytes = build(loop_graph(false, true));
  expect_loop(bytes, {{"cond", boolean(true)}}, 3);  // iterations 0, 1, 2: the third makes cond false
  expect_loop(bytes, {{"cond", boolean(false)}}, 0);
}

TEST(ControlFlow, LoopWithTripCountAndCondStopsAtTheFirst) {
  const auto bytes = build(loop_graph(true, true));
  expect_loop(bytes, {{"M", i64({}, {2})}, {"cond", boolean(true)}}, 2);
  expect_loop(bytes, {{"M", i64({}, {7})}, {"cond", boolean(true)}}, 3);
}

TEST(ControlFlow, LoopWithNeitherBoundStopsAtTheIterationLimit) {
  const auto bytes = build(loop_graph(false, false));
  auto r = run(bytes, {{"x", f32({2}, {1, 10})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("did not end within 1048576 iterations"), std::string::npos) << r.status().to_string();
}

// Scan (opset 16) over X [2, 3] along axis 1: state s [2] += column; output: the running sums,
// stacked along `out_axis`. Directions reverse the input / the output.
ir::Graph scan_graph(int64_t in_dir, int64_t out_dir, int64_t out_axis) {
  ir::Graph g;
  ir::ValueId s0 = g.add_value("s0", DataType::kFloat32, {2}, true);
  ir::ValueId x = g.add_value("X", DataType::kFloat32, {2, 3}, true);
  g.inputs = {s0, x};
  ir::ValueId s = g.add_value("s"), ys = g.add_value("ys");
  g.outputs = {s, ys};
  Body b;
  ir::ValueId bs = b.in("s_in", DataType::kFloat32, {2}), col = b.in("col", DataType::kFloat32, {2});
  ir::ValueId s_out = b.v("s_out"), y = b.v("y");
  b.node("Add", {bs, col}, {s_out});
  b.node("Identity", {s_out}, {y});
  b.g->outputs = {s_out, y};
  g.nodes.push_back(make("Scan", {s0, x}, {s, ys},
                         {{"body", b.attr()},
                          {"num_scan_inputs", ir::Attribute::make_int(1)},
                          {"scan_input_axes", ir::Attribute::make_ints({1})},
                          {"scan_input_directions", ir::Attribute::make_ints({in_dir})},
                          {"scan_output_axes", ir::Attribute::make_ints({out_axis})},
                          {"scan_output_directions", ir::Attribute::make_ints({out_dir})}},
                         16));
  return g;
}

TEST(ControlFlow, ScanForwardAndReverseAlongAnAxis) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 10, 20, 30});
  const Tensor s0 = f32({2}, {100, 200});
  struct Case {
    int64_t in_dir, out_dir, out_axis;
    Dims dims;
    std::vector<float> ys;
  };
  // Columns (1,10), (2,20), (3,30); forward running sums (101,210), (103,230), (106,260).
  const Case cases[] = {
      {0, 0, 0, {3, 2}, {101, 210, 103, 230, 106, 260}},
      {1, 0, 0, {3, 2}, {103, 230, 105, 250, 106, 260}},  // columns read last to first
      {0, 1, 0, {3, 2}, {106, 260, 103, 230, 101, 210}},  // slices stored last to first
      {0, 0, -1, {2, 3}, {101, 103, 106, 210, 230, 260}},
  };
  for (const Case& c : cases) {
    const auto bytes = build(scan_graph(c.in_dir, c.out_dir, c.out_axis));
    auto r = run(bytes, {{"s0", s0}, {"X", x}});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(values_f32((*r)[0]), (std::vector<float>{106, 260}));
    EXPECT_EQ((*r)[1].dims(), c.dims) << c.in_dir << c.out_dir << c.out_axis;
    EXPECT_EQ(values_f32((*r)[1]), c.ys) << c.in_dir << c.out_dir << c.out_axis;
  }
}

// ONNX: a Loop whose body holds an If whose then_branch reads the model input x two scopes up
// (the importer threads it through both nodes as a captured input).
TEST(ControlFlow, ImportedBodiesReadValuesOfEveryEnclosingScope) {
  using namespace testing;
  onnx::ModelProto m = make_model(17);
  onnx::GraphProto* g = m.mutable_graph();
  add_input(g, "M", onnx::TensorProto::INT64, {});
  add_input(g, "x", onnx::TensorProto::FLOAT, {2});
  add_output(g, "s_final", onnx::TensorProto::FLOAT, {2});
  *g->add_initializer() = f32_raw("s0", {2}, {0, 0});
  onnx::GraphProto body;
  body.set_name("body");
  add_input(&body, "i", onnx::TensorProto::INT64, {});
  add_input(&body, "c", onnx::TensorProto::BOOL, {});
  add_input(&body, "s", onnx::TensorProto::FLOAT, {2});
  add_output(&body, "c_out", onnx::TensorProto::BOOL, {});
  add_output(&body, "s_out", onnx::TensorProto::FLOAT, {2});
  *body.add_initializer() = raw_tensor<int64_t>("one", onnx::TensorProto::INT64, {}, {1});
  add_node(&body, "Less", "lt", {"i", "one"}, {"first"});
  onnx::GraphProto then_g, else_g;
  then_g.set_name("then");
  add_node(&then_g, "Mul", "sq", {"x", "x"}, {"t"});
  add_output(&then_g, "t", onnx::TensorProto::FLOAT, {2});
  else_g.set_name("else");
  add_node(&else_g, "Add", "dbl", {"x", "x"}, {"e"});
  add_output(&else_g, "e", onnx::TensorProto::FLOAT, {2});
  onnx::NodeProto* iff = add_node(&body, "If", "if", {"first"}, {"u"});
  auto* a = iff->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = then_g;
  a = iff->add_attribute();
  a->set_name("else_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = else_g;
  add_node(&body, "Add", "acc", {"s", "u"}, {"s_out"});
  add_node(&body, "Identity", "keep", {"c"}, {"c_out"});
  onnx::NodeProto* loop = add_node(g, "Loop", "loop", {"M", "", "s0"}, {"s_final"});
  a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  auto engine = cpu_engine_from_model(m);
  ASSERT_NE(engine, nullptr);
  auto r = run_engine(engine, {{"M", i64({}, {3})}, {"x", f32({2}, {1, 2})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values_f32((*r)[0]), (std::vector<float>{1 + 2 + 2, 4 + 4 + 4}));  // x*x once, then 2x twice
}

// A plan with If, then one whose then_branch is broken in `edit`: refused as kInvalidPlan.
void expect_corrupt_body_refused(const std::function<void(ir::Graph&)>& edit) {
  plan::PlanData p = testing::read_back(build(if_graph(false)));
  ir::Node* step = testing::find_step(p, "If");
  ASSERT_NE(step, nullptr);
  auto body = std::make_shared<ir::Graph>(*step->attrs.at("then_branch").g);
  edit(*body);
  step->attrs["then_branch"].g = body;
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes).value());
  auto lp = plan::read_plan_bytes(holder->data(), holder->size(), holder);
  ASSERT_FALSE(lp.ok());
  EXPECT_EQ(lp.status().code(), StatusCode::kInvalidPlan) << lp.status().to_string();
}

TEST(ControlFlow, PlanWithACorruptBodyIsRefused) {
  expect_corrupt_body_refused([](ir::Graph& g) { g.nodes[0].inputs[0] = 999; });        // id out of range
  expect_corrupt_body_refused([](ir::Graph& g) { g.outputs[0] = 12345; });              // output out of range
  expect_corrupt_body_refused([](ir::Graph& g) { g.num_captures = 7; });                // more captures than inputs
  expect_corrupt_body_refused([](ir::Graph& g) { std::swap(g.nodes[0].inputs[0], g.nodes[0].outputs[0]); });
  expect_corrupt_body_refused([](ir::Graph& g) { g.inputs.clear(); g.num_captures = 0; });  // no longer fits the node
  expect_corrupt_body_refused([](ir::Graph& g) { g.nodes[0].op_type = "Conv"; });       // fails its op's rule
  expect_corrupt_body_refused([](ir::Graph& g) {                                         // nested too deep
    std::shared_ptr<const ir::Graph> inner = std::make_shared<ir::Graph>(g);
    for (int d = 0; d < ir::kMaxSubgraphDepth + 1; ++d) {
      auto outer = std::make_shared<ir::Graph>(g);
      outer->nodes[0].attrs["nested"] = ir::Attribute::make_graph(inner);
      inner = outer;
    }
    g = *inner;
  });
}

}  // namespace
}  // namespace streamrt
