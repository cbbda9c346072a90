// Add(MatMul(A, W), R) -> MatMul(A, W, [bias], R) (builder/fuse_matmul_residual.cc, ops/matmul.h):
// which graphs fuse, that the fused graph computes what the unfused one did on the CPU (the same
// bits in float32), that the fused node moves to the Add's place when R is computed after the
// MatMul, the fused MatMul's checks, and the pass switch on a whole build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "builder/fusion.h"
#include "conv_test_util.h"
#include "core/float16.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"
#include "ops/matmul.h"
#include "tactics_test_util.h"

namespace streamrt::builder {
namespace {

using namespace streamrt::testing;

constexpr int64_t kK = 5, kN = 6;

struct ResidualSpec {
  DataType dtype = DataType::kFloat32;
  Dims r = {2, 3, kN};         // the residual's dims (the product is [2, 3, N])
  Dims w = {kK, kN};
  bool residual_first = false;  // Add(R, MatMul) instead of Add(MatMul, R)
  bool with_bias = false;       // Add(Add(MatMul, b), R): fuse_matmul_bias runs first
  bool r_after = false;         // R = Softmax(r) computed between the MatMul and the Add
  bool w_input = false;         // W a graph input instead of a constant
  bool mm_read_twice = false;   // a Neg also reads the product (a second graph output)
};

// y = Add(MatMul(a, w) [+ b], R) as `spec` says; graph inputs a, r (and w).
ir::Graph residual_graph(const ResidualSpec& spec) {
  ir::Graph g;
  auto a = g.add_value("a", spec.dtype, {2, 3, kK}, true);
  auto r = g.add_value("r", spec.dtype, spec.r, true);
  auto w = g.add_value("w", spec.dtype, spec.w, true);
  g.inputs = {a, r};
  if (spec.w_input) g.inputs.push_back(w);
  else g.set_constant(w, random_tensor(spec.dtype, spec.w, 2));
  ir::ValueId h = add_op(g, "MatMul", {a, w});
  if (spec.with_bias) {
    auto b = g.add_value("b", spec.dtype, {kN}, true);
    g.set_constant(b, random_tensor(spec.dtype, {kN}, 3));
    h = add_op(g, "Add", {h, b});
  }
  // Softmax: element-wise fusion would take a Neg and the Add into one step.
  ir::ValueId res = spec.r_after ? add_op(g, "Softmax", {r}) : r;
  const ir::ValueId y = add_op(g, "Add", spec.residual_first ? std::vector{res, h} : std::vector{h, res});
  g.outputs = {y};
  if (spec.mm_read_twice) g.outputs.push_back(add_op(g, "Neg", {h}));
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

const ir::Node* find_op(const ir::Graph& g, const char* op) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

// dtype, R first in the Add, with a fused bias, R computed after the MatMul.
class MatMulResidualFusion : public ::testing::TestWithParam<std::tuple<DataType, bool, bool, bool>> {};

TEST_P(MatMulResidualFusion, FusedGraphComputesTheSameOutputs) {
  auto [dtype, residual_first, with_bias, r_after] = GetParam();
  ResidualSpec spec{.dtype = dtype, .residual_first = residual_first, .with_bias = with_bias, .r_after = r_after};
  ir::Graph g = residual_graph(spec);
  const std::vector<Tensor> in = {random_tensor(dtype, {2, 3, kK}, 1), random_tensor(dtype, spec.r, 4)};
  const Tensor want = interpret_graph(g, in);

  if (with_bias) ASSERT_EQ(fuse_matmul_bias(g), 1u);
  EXPECT_EQ(fuse_matmul_residual(g), 1u);
  EXPECT_EQ(find_op(g, "Add"), nullptr);
  const ir::Node* mm = find_op(g, "MatMul");
  ASSERT_NE(mm, nullptr);
  ASSERT_EQ(mm->inputs.size(), 4u);
  EXPECT_TRUE(ops::matmul_has_residual_attr(*mm));
  EXPECT_EQ(ops::matmul_has_bias_attr(*mm), with_bias);
  EXPECT_EQ(mm->inputs[2] != ir::kNoValue, with_bias);
  if (r_after) EXPECT_EQ(&g.nodes.back(), mm) << "the fused MatMul reads R: it runs after the Softmax computing it";
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  const Tensor got = interpret_graph(g, in);
  ASSERT_EQ(got.dims(), want.dims());
  // Added before narrowing: the unfused bits in float32; in float16 a rounding fewer.
  if (dtype == DataType::kFloat32) EXPECT_EQ(std::memcmp(got.data(), want.data(), want.nbytes()), 0);
  auto gv = values_f32(got), wv = values_f32(want);
  for (size_t i = 0; i < gv.size(); ++i)
    EXPECT_NEAR(gv[i], wv[i], dtype == DataType::kFloat32 ? 1e-6f : 2e-3f * std::max(1.f, std::fabs(wv[i]))) << i;
}

INSTANTIATE_TEST_SUITE_P(Cases, MatMulResidualFusion,
                         ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16),
                                            ::testing::Bool(), ::testing::Bool(), ::testing::Bool()));

TEST(MatMulResidualFusionNegative, LeavesOtherPatternsAlone) {
  struct Case {
    const char* what;
    void (*change)(ResidualSpec&);
  };
  const Case cases[] = {
      {"R [N]: broadcast", [](ResidualSpec& s) { s.r = {kN}; }},
      {"R [1, 3, N]: broadcast over the batch", [](ResidualSpec& s) { s.r = {1, 3, kN}; }},
      {"W not constant", [](ResidualSpec& s) { s.w_input = true; }},
      {"W 3-D (batched)", [](ResidualSpec& s) { s.w = {2, kK, kN}; }},
      {"product read twice", [](ResidualSpec& s) { s.mm_read_twice = true; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ResidualSpec spec;
    c.change(spec);
    ir::Graph g = residual_graph(spec);
    const size_t nodes = g.nodes.size();
    EXPECT_EQ(fuse_matmul_residual(g), 0u);
    EXPECT_EQ(g.nodes.size(), nodes);
  }
}

TEST(MatMulResidualOp, ChecksItsFusedInputs) {
  auto infer = [](const ir::Node& n, std::vector<Dims> dims) {
    ir::Graph g;
    std::vector<ir::ValueId> in;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].empty()) {
        in.push_back(ir::kNoValue);
        continue;
      }
      static const char* const names[] = {"x0", "x1", "x2", "x3"};
      in.push_back(g.add_value(names[i], DataType::kFloat32, dims[i], true));
      g.inputs.push_back(in.back());
    }
    ir::Node m = n;
    m.inputs = in;
    m.outputs = {g.add_value("y")};
    g.nodes = {m};
    g.outputs = m.outputs;
    return ir::infer_shapes(g);
  };
  ir::Node with = make_node("MatMul", 4, 1, {{ops::kMatMulResidualAttr, ir::Attribute::make_int(1)}});
  ir::Node without = make_node("MatMul", 4, 1, {});
  EXPECT_TRUE(infer(with, {{3, kK}, {kK, kN}, {}, {3, kN}}).ok());
  EXPECT_FALSE(infer(without, {{3, kK}, {kK, kN}, {}, {3, kN}}).ok()) << "a residual without the attribute";
  EXPECT_FALSE(infer(with, {{3, kK}, {kK, kN}, {}, {1, kN}}).ok()) << "a broadcasting residual";
  EXPECT_FALSE(infer(with, {{3, kK}, {kK, kN}}).ok()) << "the attribute without a residual";
  // By hand: [1, 2] @ [2, 2] + R.
  auto out = run_ok(with, {f32({1, 2}, {1, 2}), f32({2, 2}, {1, 0, 0, 1}), Tensor(), f32({1, 2}, {10, 20})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{11, 22}));
}

// A whole build: the plan's MatMul takes the residual and no Add is left; with the switch off the
// Add stays; both compute the same on the CPU.
TEST(MatMulResidualFusion, BuildSwitch) {
  const ir::Graph g = residual_graph(ResidualSpec{.with_bias = true, .r_after = true});
  std::map<std::string, Tensor> in = {{"a", random_tensor(DataType::kFloat32, {2, 3, kK}, 1)},
                                      {"r", random_tensor(DataType::kFloat32, {2, 3, kN}, 4)}};
  std::vector<Tensor> outs;
  for (bool on : {true, false}) {
    BuilderConfig c;
    c.device = DeviceType::kCpu;
    c.passes.matmul_residual_fusion = on;
    auto bytes = build_plan_from_graph(g, c);
    ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
    plan::PlanData p = read_back(*bytes);
    size_t adds = 0, fused = 0;
    for (const ir::Node& s : p.steps) adds += s.op_type == "Add", fused += ops::matmul_has_residual_attr(s);
    EXPECT_EQ(adds, on ? 0u : 1u);
    EXPECT_EQ(fused, on ? 1u : 0u);
    auto out = run_graph_plan(DeviceType::kCpu, *bytes, in);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    outs.push_back(*out);
  }
  EXPECT_EQ(std::memcmp(outs[0].data(), outs[1].data(), outs[0].nbytes()), 0);
}

}  // namespace
}  // namespace streamrt::builder
