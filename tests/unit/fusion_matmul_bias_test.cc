// Add(MatMul(A, W), b) -> MatMul(A, W, b) (builder/fuse_matmul_bias.cc, ops/matmul.h): which
// graphs fuse, that the fused graph computes what the unfused one did on the CPU, the fused
// MatMul's checks, and that weight streaming and refit still see W and b as weights.
#include <gtest/gtest.h>

#include <cmath>

#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include "builder/fusion.h"
#include "cache_test_util.h"
#include "core/float16.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"
#include "ops/matmul.h"
#include "plan/plan.h"
#include "streaming_test_util.h"
#include "streamrt/refit.h"

namespace streamrt::builder {
namespace {

using namespace streamrt::testing;

constexpr int64_t kK = 5, kN = 6;

// Random values of `dtype` (float32, float16 or an integer type) of the given dims.
Tensor random_tensor(DataType dtype, const Dims& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(dims_numel(dims)));
  for (float& f : v) f = nd(rng);
  if (dtype == DataType::kFloat32) return Tensor::from_vector(dtype, dims, v);
  if (dtype == DataType::kFloat16) {
    std::vector<Half> h;
    for (float f : v) h.push_back(Half(f));
    return Tensor::from_vector(dtype, dims, h);
  }
  std::vector<int64_t> ints;
  for (float f : v) ints.push_back(static_cast<int64_t>(f * 4));
  return Tensor::from_vector(DataType::kInt64, dims, ints);
}

struct LinearSpec {
  DataType dtype = DataType::kFloat32;
  Dims a = {2, 3, kK};
  Dims w = {kK, kN};
  Dims bias = {kN};
  bool bias_first = false;      // Add(b, MatMul) instead of Add(MatMul, b)
  bool w_input = false;         // W a graph input instead of a constant
  bool bias_input = false;      // b a graph input instead of a constant
  bool mm_read_twice = false;   // a Neg also reads the MatMul output (a second graph output)
  bool mm_is_output = false;    // the MatMul output is a graph output too
};

// y = Add(MatMul(a, w), bias) as `spec` says; graph inputs come first in `inputs` order.
ir::Graph linear_graph(const LinearSpec& spec) {
  ir::Graph g;
  auto a = g.add_value("a", spec.dtype, spec.a, true);
  auto w = g.add_value("w", spec.dtype, spec.w, true);
  auto b = g.add_value("b", spec.dtype, spec.bias, true);
  auto h = g.add_value("h"), y = g.add_value("y");
  g.inputs = {a};
  if (spec.w_input) g.inputs.push_back(w);
  else g.set_constant(w, random_tensor(spec.dtype, spec.w, 2));
  if (spec.bias_input) g.inputs.push_back(b);
  else g.set_constant(b, random_tensor(spec.dtype, spec.bias, 3));
  auto node = [](const std::string& op, std::vector<ir::ValueId> in, ir::ValueId out) {
    ir::Node n;
    n.name = op;
    n.op_type = op;
    n.opset = 17;
    n.inputs = std::move(in);
    n.outputs = {out};
    return n;
  };
  g.nodes = {node("MatMul", {a, w}, h), node("Add", spec.bias_first ? std::vector{b, h} : std::vector{h, b}, y)};
  g.outputs = {y};
  if (spec.mm_read_twice) {
    auto n = g.add_value("neg");
    g.nodes.push_back(node("Neg", {h}, n));
    g.outputs.push_back(n);
  }
  if (spec.mm_is_output) g.outputs.push_back(h);
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// ---------------------------------------------------------------------------------------
// Graphs that fuse

// dtype, rank of A, bias first in the Add, bias of rank 1 (else of the output's rank).
class MatMulBiasFusion : public ::testing::TestWithParam<std::tuple<DataType, int, bool, bool>> {};

TEST_P(MatMulBiasFusion, FusedGraphComputesTheSameOutputs) {
  auto [dtype, a_rank, bias_first, bias_rank1] = GetParam();
  LinearSpec spec;
  spec.dtype = dtype;
  spec.a = a_rank == 2 ? Dims{3, kK} : Dims{2, 3, kK};
  spec.bias = bias_rank1 ? Dims{kN} : a_rank == 2 ? Dims{1, kN} : Dims{1, 1, kN};
  spec.bias_first = bias_first;
  ir::Graph g = linear_graph(spec);
  const Tensor a = random_tensor(dtype, spec.a, 1);
  const Tensor want = interpret_graph(g, std::vector<Tensor>{a});

  EXPECT_EQ(fuse_matmul_bias(g), 1u);
  ASSERT_EQ(g.nodes.size(), 1u);
  const ir::Node& mm = g.nodes[0];
  EXPECT_EQ(mm.op_type, "MatMul");
  ASSERT_EQ(mm.inputs.size(), 3u);
  EXPECT_EQ(mm.inputs[2], g.find_value("b"));  // the bias stays the same constant (refit by name)
  EXPECT_EQ(mm.outputs, std::vector<ir::ValueId>{g.find_value("y")});
  EXPECT_TRUE(ops::matmul_has_bias_attr(mm));
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  const Tensor got = interpret_graph(g, std::vector<Tensor>{a});
  ASSERT_EQ(got.dims(), want.dims());
  // The CPU kernel adds the bias before narrowing, as the GPU's epilogue does: the unfused bits in
  // float32; in float16 one rounding fewer than MatMul then Add, so within an ulp of theirs.
  if (dtype == DataType::kFloat32) { EXPECT_TRUE(same_bytes(got, want)); }
  auto gv = values_f32(got), wv = values_f32(want);
  for (size_t i = 0; i < gv.size(); ++i)
    EXPECT_NEAR(gv[i], wv[i], dtype == DataType::kFloat32 ? 1e-6f : 1e-3f * std::max(1.f, std::fabs(wv[i]))) << i;
}

INSTANTIATE_TEST_SUITE_P(Cases, MatMulBiasFusion,
                         ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16),
                                            ::testing::Values(2, 3), ::testing::Bool(), ::testing::Bool()));

TEST(MatMulBiasFusion, RunFusionsFusesBeforeElementWiseFusionTakesTheAdd) {
  LinearSpec spec;
  ir::Graph g = linear_graph(spec);
  // y -> Relu -> z: element-wise fusion would have wanted the Add together with the Relu.
  auto z = g.add_value("z");
  ir::Node relu;
  relu.name = "relu";
  relu.op_type = "Relu";
  relu.opset = 17;
  relu.inputs = {g.outputs[0]};
  relu.outputs = {z};
  g.nodes.push_back(relu);
  g.outputs = {z};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  run_fusions(g);
  size_t fused_matmuls = 0;
  for (const ir::Node& n : g.nodes) {
    EXPECT_NE(n.op_type, "Add");
    if (n.op_type == "MatMul" && n.inputs.size() == 3) ++fused_matmuls;
  }
  EXPECT_EQ(fused_matmuls, 1u);
}

// ---------------------------------------------------------------------------------------
// Graphs that do not

void expect_not_fused(const LinearSpec& spec, const char* what) {
  SCOPED_TRACE(what);
  ir::Graph g = linear_graph(spec);
  const size_t nodes = g.nodes.size();
  EXPECT_EQ(fuse_matmul_bias(g), 0u);
  ASSERT_EQ(g.nodes.size(), nodes);
  EXPECT_EQ(g.nodes[0].inputs.size(), 2u);
}

TEST(MatMulBiasFusionNegative, LeavesOtherPatternsAlone) {
  struct Case {
    const char* what;
    void (*change)(LinearSpec&);
  };
  const Case cases[] = {
      {"bias [3, N]: a bias per row", [](LinearSpec& s) { s.bias = {3, kN}; }},
      {"bias [1]: a broadcast scalar", [](LinearSpec& s) { s.bias = {1}; }},
      {"bias of higher rank than the output", [](LinearSpec& s) { s.a = {3, kK}, s.bias = {1, 1, kN}; }},
      {"W not constant", [](LinearSpec& s) { s.w_input = true; }},
      {"bias not constant", [](LinearSpec& s) { s.bias_input = true; }},
      {"W 3-D (batched)", [](LinearSpec& s) { s.w = {2, kK, kN}; }},
      {"MatMul output read twice", [](LinearSpec& s) { s.mm_read_twice = true; }},
      {"MatMul output is a graph output", [](LinearSpec& s) { s.mm_is_output = true; }},
      {"integer types", [](LinearSpec& s) { s.dtype = DataType::kInt64; }},
      {"A 1-D", [](LinearSpec& s) { s.a = {kK}; }},
  };
  for (const Case& c : cases) {
    LinearSpec spec;
    c.change(spec);
    expect_not_fused(spec, c.what);
  }
}

// BuilderPasses::matmul_bias_fusion off: run_fusions leaves the Add (and the other passes run).
TEST(MatMulBiasFusionNegative, DiagnosticSwitchDisablesThePass) {
  auto steps = [](const ir::Graph& g) {  // op / number of inputs
    std::vector<std::string> out;
    for (const ir::Node& n : g.nodes) out.push_back(n.op_type + "/" + std::to_string(n.inputs.size()));
    return out;
  };
  BuilderPasses off;
  off.matmul_bias_fusion = false;
  ir::Graph g = linear_graph(LinearSpec{});
  run_fusions(g, off);
  EXPECT_EQ(steps(g), (std::vector<std::string>{"MatMul/2", "Add/2"}));
  ir::Graph h = linear_graph(LinearSpec{});
  run_fusions(h);
  EXPECT_EQ(steps(h), (std::vector<std::string>{"MatMul/3"}));
}

// ---------------------------------------------------------------------------------------
// The fused MatMul's own checks

ir::Node fused_node(bool with_attr) {
  std::map<std::string, ir::Attribute> attrs;
  if (with_attr) attrs[ops::kMatMulBiasAttr] = ir::Attribute::make_int(1);
  return make_node("MatMul", 3, 1, attrs);
}

TEST(MatMulBiasOp, AddsTheBiasToEveryRow) {
  // A [2, 2] @ B [2, 3] + b [3], by hand.
  auto out = run_ok(fused_node(true), {f32({2, 2}, {1, 2, 3, 4}), f32({2, 3}, {1, 0, -1, 0, 1, 2}),
                                       f32({3}, {10, 20, 30})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{11, 22, 33, 13, 24, 35}));
}

TEST(MatMulBiasOp, RejectsMalformedBiases) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 3}, {1, 0, -1, 0, 1, 2});
  auto fails = [&](const ir::Node& n, const Tensor& bias, const char* what) {
    auto r = ops::evaluate_on_host(n, {a, b, bias});
    EXPECT_FALSE(r.ok()) << what;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("MatMul"), std::string::npos) << r.status().message();
    }
  };
  fails(fused_node(false), f32({3}, {1, 2, 3}), "a third input without __bias");
  fails(fused_node(true), f32({2}, {1, 2}), "bias of the wrong length");
  fails(fused_node(true), f32({2, 3}, {1, 2, 3, 4, 5, 6}), "bias with rows");
  fails(fused_node(true), f32({1, 1, 3}, {1, 2, 3}), "bias of higher rank than the output");
  fails(fused_node(true), i64({3}, {1, 2, 3}), "integer bias");
  auto vec = ops::evaluate_on_host(fused_node(true), {a, f32({2}, {1, 1}), f32({1}, {1})});
  EXPECT_FALSE(vec.ok()) << "B 1-D";
}

// ---------------------------------------------------------------------------------------
// Plans: weight streaming and refit

constexpr int64_t kSeq = 4, kHidden = 32;

// x [1, kSeq, kHidden] -> Linear(W1, B1) -> Relu -> Linear(W2, B2) -> y, nn.Linear as exported
// for a 3-D input (MatMul + Add; the second Add with the bias first).
void write_linear_model(const std::string& path, uint32_t seed) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, kSeq, kHidden});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, kSeq, kHidden});
  for (int l = 1; l <= 2; ++l) {
    const std::string w = "W" + std::to_string(l), b = "B" + std::to_string(l);
    *g->add_initializer() = f32_raw(w, {kHidden, kHidden}, values_f32(random_tensor(DataType::kFloat32,
                                                                                   {kHidden, kHidden}, seed + l)));
    *g->add_initializer() = f32_raw(b, {kHidden}, values_f32(random_tensor(DataType::kFloat32, {kHidden}, seed + 10 + l)));
  }
  add_node(g, "MatMul", "mm1", {"x", "W1"}, {"h1"});
  add_node(g, "Add", "add1", {"h1", "B1"}, {"z1"});
  add_node(g, "Relu", "relu", {"z1"}, {"r"});
  add_node(g, "MatMul", "mm2", {"r", "W2"}, {"h2"});
  add_node(g, "Add", "add2", {"B2", "h2"}, {"y"});
  write_file(path, serialize(m));
}

std::map<std::string, Tensor> linear_inputs() {
  return {{"x", random_tensor(DataType::kFloat32, {1, kSeq, kHidden}, 99)}};
}

std::vector<uint8_t> build_linear(const std::string& path, bool streaming) {
  BuilderConfig c;
  c.weight_streaming = streaming;
  c.min_streamable_bytes = 64;  // the 128-byte biases stream too
  c.shapes["x"] = {1, kSeq, kHidden};
  auto bytes = build_plan_from_onnx(path, c);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

TEST(MatMulBiasPlan, StreamsWAndBiasWithBitwiseIdenticalOutputs) {
  TempDir dir;
  write_linear_model(dir.file("m.onnx"), 1);
  const auto inputs = linear_inputs();
  std::vector<uint8_t> ws_bytes = build_linear(dir.file("m.onnx"), true);
  auto lp = plan::read_plan_bytes(ws_bytes.data(), ws_bytes.size(), nullptr);
  ASSERT_TRUE(lp.ok()) << lp.status().to_string();
  size_t fused = 0;
  for (const ir::Node& s : lp->data.steps) {
    EXPECT_NE(s.op_type, "Add");
    if (s.op_type == "MatMul" && s.inputs.size() == 3) ++fused;
  }
  EXPECT_EQ(fused, 2u);
  for (const plan::WeightEntry& w : lp->data.weights) EXPECT_TRUE(w.streamable) << w.name;

  auto plain = load_cpu(build_linear(dir.file("m.onnx"), false));
  auto ws = load_cpu(std::move(ws_bytes));
  ASSERT_TRUE(plain && ws);
  auto expected = run_once(*plain, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  const uint64_t all = ws->streamable_weights_size();
  EXPECT_EQ(all, uint64_t{2 * (kHidden * kHidden + kHidden) * 4});
  for (uint64_t budget : {uint64_t{0}, all}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    ASSERT_TRUE(ws->set_weight_streaming_budget(budget).ok());
    StreamingStats stats;
    auto got = run_once(*ws, inputs, &stats);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(*got, *expected);  // bitwise
    EXPECT_EQ(stats.bytes_streamed >= all, budget == 0);
  }
}

TEST(MatMulBiasPlan, RefitOfWAndBiasGivesTheNewModelsOutputs) {
  TempDir dir;
  write_linear_model(dir.file("a.onnx"), 1);
  write_linear_model(dir.file("b.onnx"), 50);
  const auto inputs = linear_inputs();
  auto a = load_cpu(build_linear(dir.file("a.onnx"), false));
  auto b = load_cpu(build_linear(dir.file("b.onnx"), false));
  ASSERT_TRUE(a && b);
  auto want = run_once(*b, inputs);
  auto before = run_once(*a, inputs);
  ASSERT_TRUE(want.ok() && before.ok());
  ASSERT_NE(*before, *want);
  auto r = Refitter::create(a);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::vector<std::string> names;
  for (const WeightDesc& d : (*r)->weights()) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"W1", "B1", "W2", "B2"}));
  ASSERT_TRUE((*r)->set_weights_from_onnx(dir.file("b.onnx")).ok());
  EXPECT_EQ((*r)->num_staged(), 4u);
  ASSERT_TRUE((*r)->refit().ok());
  auto got = run_once(*a, inputs);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*got, *want);  // bitwise: the same plan with b's weights
}

}  // namespace
}  // namespace streamrt::builder
