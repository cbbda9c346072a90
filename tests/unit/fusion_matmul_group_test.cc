// MatMuls that read one activation -> MatMulGroup (builder/fuse_matmul_group.cc, ops/matmul_group.h):
// which graphs group, what the group absorbs (the RMS normalization, SwiGLU's gate), that the
// grouped plan computes the unfused plan's bits on the CPU (float32 and float16), the op's checks,
// and refit by the weights' own names.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "builder/fusion.h"
#include "matmul_group_graph.h"
#include "onnx_model_util.h"
#include "op_test_util.h"
#include "ops/matmul_group.h"
#include "plan/plan.h"
#include "streamrt/refit.h"
#include "tactics_test_util.h"

namespace streamrt::builder {
namespace {

using namespace streamrt::testing;

struct Built {
  plan::PlanData plan;
  Tensor out;
};

Built build_and_run(const ir::Graph& g, DataType precision, bool group, bool streaming = false) {
  BuilderConfig c;
  c.device = DeviceType::kCpu;
  c.float_precision = precision;
  c.passes.matmul_group_fusion = group;
  c.weight_streaming = streaming;
  c.min_streamable_bytes = 0;
  auto bytes = build_plan_from_graph(g, c);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return {};
  Built b{read_back(*bytes), {}};
  auto out = run_graph_plan(DeviceType::kCpu, *bytes, block_inputs(g, 3));
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  if (out.ok()) b.out = *out;
  return b;
}

size_t count_op(const plan::PlanData& p, const char* op) {
  size_t n = 0;
  for (const ir::Node& s : p.steps) n += s.op_type == op;
  return n;
}

const ir::Node* group_step(const plan::PlanData& p) {
  for (const ir::Node& s : p.steps)
    if (s.op_type == ops::kMatMulGroup) return &s;
  return nullptr;
}

struct Case {
  const char* name;
  GroupSpec spec;
  size_t weights;
  bool norm, gate, bias;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MatMulGroupFusion : public ::testing::TestWithParam<std::tuple<Case, DataType>> {};

// One group with what it absorbed; the unfused plan's output bit for bit.
TEST_P(MatMulGroupFusion, GroupsAndComputesTheUnfusedBits) {
  auto [c, dtype] = GetParam();
  const ir::Graph g = group_graph(c.spec);
  const Built fused = build_and_run(g, dtype, true), plain = build_and_run(g, dtype, false);
  ASSERT_EQ(count_op(fused.plan, ops::kMatMulGroup), 1u);
  EXPECT_EQ(count_op(plain.plan, ops::kMatMulGroup), 0u);
  EXPECT_EQ(count_op(fused.plan, "MatMul"), 0u);
  EXPECT_EQ(count_op(fused.plan, "RMSNormalization"), 0u);
  EXPECT_EQ(count_op(fused.plan, "FusedElementwise"), 0u);
  const ir::Node& s = *group_step(fused.plan);
  auto present = [&](size_t i) { return i < s.inputs.size() && s.inputs[i] != ir::kNoValue; };
  EXPECT_EQ(present(ops::kMatMulGroupScale), c.norm);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(present(ops::kMatMulGroupWeight + i), i < c.weights) << i;
  EXPECT_EQ(present(ops::kMatMulGroupBias), c.bias);
  EXPECT_EQ(s.attr_int("gate", 0).value(), c.gate ? 1 : 0);
  EXPECT_EQ(s.outputs.size(), (c.gate ? 1 : c.weights) + (c.norm || c.gate ? 1 : 0)) << "products and scratch";
  EXPECT_EQ(count_op(fused.plan, "Rotary"), 0u) << "rotations left outside the group";
  EXPECT_EQ(count_op(plain.plan, "Rotary"), c.spec.rotary > 0 ? 1u : 0u) << "Q and K rotated in one step";
  EXPECT_EQ(s.attr_int("rotary_dim", 0).value(), c.spec.rotary);
  for (size_t i = ops::kMatMulGroupRotary; i < ops::kMatMulGroupInputs; ++i)
    EXPECT_EQ(present(i), c.spec.rotary > 0) << "rotary table input " << i;
  ASSERT_EQ(fused.out.dims(), plain.out.dims());
  ASSERT_GT(fused.out.nbytes(), 0u);
  EXPECT_EQ(std::memcmp(fused.out.data(), plain.out.data(), plain.out.nbytes()), 0)
      << "the group rounds where the unfused steps round";
}

const Case kCases[] = {
    {"qkv_norm", GroupSpec{}, 3, true, false, false},
    {"qkv_norm_bias", GroupSpec{.bias = true}, 3, true, false, true},
    {"qkv_no_norm", GroupSpec{.norm = false}, 3, false, false, false},
    {"gate_up_norm", GroupSpec{.n = {24, 24}, .gate = true}, 2, true, true, false},
    {"gate_up_swapped", GroupSpec{.n = {24, 24}, .gate = true, .gate_swapped = true}, 2, true, true, false},
    {"gate_up_bias_no_norm", GroupSpec{.n = {24, 24}, .norm = false, .gate = true, .bias = true}, 2, false, true, true},
    {"lm_head_norm", GroupSpec{.x = {1, 16}, .n = {40}}, 1, true, false, false},
    {"one_row", GroupSpec{.x = {1, 1, 16}}, 3, true, false, false},
    {"many_rows", GroupSpec{.x = {3, 11, 16}}, 3, true, false, false},  // past the CPU's few-row path
    // Q and K rotated (Rotary steps on head views): the group takes the rotations over.
    {"qkv_rotary", GroupSpec{.x = {2, 5, 32}, .n = {32, 16, 16}, .rotary = 8}, 3, true, false, false},
    {"qkv_rotary_bias", GroupSpec{.x = {1, 7, 32}, .n = {64, 32, 32}, .bias = true, .rotary = 16}, 3, true, false, true},
};

INSTANTIATE_TEST_SUITE_P(Cases, MatMulGroupFusion,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(DataType::kFloat32, DataType::kFloat16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) == DataType::kFloat32 ? "_fp32" : "_fp16");
                         });

TEST(MatMulGroupFusion, WhatStaysOutside) {
  {
    SCOPED_TRACE("tables of 6 positions, sequences of any length (a profile): the Rotary stays");
    const ir::Graph g = group_graph({.x = {1, 6, 32}, .n = {32, 16, 16}, .rotary = 8, .dynamic_seq = true});
    BuilderConfig c;
    c.device = DeviceType::kCpu;
    c.profiles["x"] = {{1, 1, 32}, {1, 6, 32}, {1, 12, 32}};
    auto bytes = build_plan_from_graph(g, c);
    ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
    const plan::PlanData p = read_back(*bytes);
    EXPECT_EQ(count_op(p, ops::kMatMulGroup), 1u);
    EXPECT_EQ(count_op(p, "Rotary"), 1u) << "a known table length over an unknown sequence must not fold";
    auto at6 = run_graph_plan(DeviceType::kCpu, *bytes, {{"x", random_tensor(DataType::kFloat32, {1, 6, 32}, 3)}});
    ASSERT_TRUE(at6.ok()) << at6.status().to_string();
    auto at12 = run_graph_plan(DeviceType::kCpu, *bytes, {{"x", random_tensor(DataType::kFloat32, {1, 12, 32}, 3)}});
    EXPECT_FALSE(at12.ok()) << "12 positions against tables of 6: the Rotary refuses them";
  }
  {
    SCOPED_TRACE("rotary tables of a row per batch: row r of the product is not table row r % T, the Rotary stays");
    const ir::Graph g = group_graph({.x = {2, 5, 32}, .n = {32, 16, 16}, .rotary = 8, .rotary_per_batch = true});
    const Built fused = build_and_run(g, DataType::kFloat32, true), plain = build_and_run(g, DataType::kFloat32, false);
    EXPECT_EQ(count_op(fused.plan, ops::kMatMulGroup), 1u);
    EXPECT_EQ(count_op(fused.plan, "Rotary"), 1u);
    EXPECT_EQ(group_step(fused.plan)->attr_int("rotary_dim", 0).value(), 0);
    ASSERT_EQ(fused.out.nbytes(), plain.out.nbytes());
    EXPECT_EQ(std::memcmp(fused.out.data(), plain.out.data(), plain.out.nbytes()), 0);
  }
  {
    SCOPED_TRACE("the normalized X also read by a Neg: the group forms, the norm stays");
    const Built b = build_and_run(group_graph({.norm_read_elsewhere = true}), DataType::kFloat32, true);
    EXPECT_EQ(count_op(b.plan, ops::kMatMulGroup), 1u);
    EXPECT_EQ(count_op(b.plan, "RMSNormalization"), 1u);
    EXPECT_FALSE(group_step(b.plan)->inputs[ops::kMatMulGroupScale] != ir::kNoValue);
  }
  {
    SCOPED_TRACE("a MatMul taking a residual is no member: the other two group");
    const Built b = build_and_run(group_graph({.residual_member = true}), DataType::kFloat32, true);
    EXPECT_EQ(count_op(b.plan, ops::kMatMulGroup), 1u);
    EXPECT_EQ(count_op(b.plan, "MatMul"), 1u);
    EXPECT_EQ(count_op(b.plan, "RMSNormalization"), 1u) << "X has a reader outside the group";
  }
  {
    SCOPED_TRACE("a weight that is no constant is no member");
    const Built b = build_and_run(group_graph({.weights_inputs = true}), DataType::kFloat32, true);
    EXPECT_EQ(count_op(b.plan, "MatMul"), 1u);
    EXPECT_EQ(count_op(b.plan, ops::kMatMulGroup), 1u);
  }
  {
    SCOPED_TRACE("one MatMul without a norm: nothing to group");
    const Built b = build_and_run(group_graph({.n = {8}, .norm = false}), DataType::kFloat32, true);
    EXPECT_EQ(count_op(b.plan, ops::kMatMulGroup), 0u);
    EXPECT_EQ(count_op(b.plan, "MatMul"), 1u);
  }
  {
    SCOPED_TRACE("five readers: groups of three and two, no norm absorbed");
    const Built b = build_and_run(group_graph({.n = {8, 8, 8, 8, 8}}), DataType::kFloat32, true);
    EXPECT_EQ(count_op(b.plan, ops::kMatMulGroup), 2u);
    EXPECT_EQ(count_op(b.plan, "RMSNormalization"), 1u);
  }
  {
    SCOPED_TRACE("weight streaming: every weight streams on its own");
    const Built b = build_and_run(group_graph({}), DataType::kFloat32, true, true);
    EXPECT_EQ(count_op(b.plan, ops::kMatMulGroup), 0u);
    EXPECT_EQ(count_op(b.plan, "MatMul"), 3u);
  }
}

// Grouped weights keep their names: refitting a plan with another graph's weights by name gives
// the plan that graph builds, byte for byte.
// A decode export's head: the final norm, the last token's row sliced out, the LM head. The Slice
// moves ahead of the norm (builder/simplify.cc), which then groups with the head.
TEST(MatMulGroupFusion, NormOfTheLastTokenGroupsWithTheHead) {
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16}) {
    ir::Graph g;
    const ir::ValueId x = g.add_value("x", DataType::kFloat32, {2, 3, 64}, true);
    g.inputs = {x};
    std::vector<float> scale(64, 1.25f), w(64 * 96);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 7919 % 13) - 6) / 16.f;
    const ir::ValueId norm = add_op(g, "RMSNormalization", {x, add_constant(g, f32({64}, scale))});
    const ir::ValueId last = add_op(g, "Slice", {norm, add_constant(g, i64({1}, {-1})), add_constant(g, i64({1}, {1 << 30})),
                                                 add_constant(g, i64({1}, {1}))});
    g.outputs = {add_op(g, "MatMul", {last, add_constant(g, f32({64, 96}, w))})};
    g.value(g.outputs[0]).name = "logits";
    const Built grouped = build_and_run(g, precision, true), plain = build_and_run(g, precision, false);
    EXPECT_EQ(count_op(grouped.plan, ops::kMatMulGroup), 1u) << dtype_name(precision);
    EXPECT_EQ(count_op(grouped.plan, "RMSNormalization"), 0u) << dtype_name(precision);
    EXPECT_EQ(count_op(plain.plan, "RMSNormalization"), 1u) << dtype_name(precision);
    ASSERT_EQ(grouped.out.dims(), (Dims{2, 1, 96}));
    EXPECT_EQ(grouped.out.to_float_vector().value(), plain.out.to_float_vector().value()) << dtype_name(precision);
  }
}

TEST(MatMulGroupFusion, RefitByNameGivesTheOtherGraphsPlan) {
  const ir::Graph a = group_graph({.bias = true});
  ir::Graph b = a;
  uint32_t seed = 90;
  for (auto& [id, t] : b.constants) b.set_constant(id, random_tensor(t.dtype(), t.dims(), seed++));
  BuilderConfig c;
  c.device = DeviceType::kCpu;
  auto plan_a = build_plan_from_graph(a, c), plan_b = build_plan_from_graph(b, c);
  ASSERT_TRUE(plan_a.ok() && plan_b.ok());
  ASSERT_EQ(count_op(read_back(*plan_a), ops::kMatMulGroup), 1u);
  ASSERT_NE(*plan_a, *plan_b);
  TempDir dir;
  write_file(dir.file("a.plan"), std::string(plan_a->begin(), plan_a->end()));
  auto r = Refitter::open_plan(dir.file("a.plan"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  size_t set = 0;
  for (const auto& [id, t] : b.constants) {
    const std::string& name = b.value(id).name;
    ASSERT_TRUE((*r)->set_weights(name, t.dtype(), t.dims(), t.data(), t.nbytes()).ok()) << name;
    ++set;
  }
  EXPECT_EQ(set, 5u) << "the norm's scale, three weights, a bias";
  ASSERT_TRUE((*r)->refit().ok());
  ASSERT_TRUE((*r)->write_plan(dir.file("out.plan")).ok());
  auto mapped = plan::read_plan(dir.file("out.plan"));
  ASSERT_TRUE(mapped.ok());
  const auto* p = static_cast<const uint8_t*>(mapped->mapping.get());
  EXPECT_EQ(std::vector<uint8_t>(p, p + mapped->file_size), *plan_b);
}

TEST(MatMulGroupOp, ChecksItsInputsAndAttributes) {
  auto infer = [](std::vector<Dims> dims, size_t outputs, std::map<std::string, ir::Attribute> attrs = {}) {
    ir::Graph g;
    ir::Node n;
    n.name = "group";
    n.op_type = ops::kMatMulGroup;
    n.opset = 17;
    n.attrs = std::move(attrs);
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].empty()) {
        n.inputs.push_back(ir::kNoValue);
        continue;
      }
      n.inputs.push_back(g.add_value("in" + std::to_string(i), DataType::kFloat32, dims[i], true));
      g.inputs.push_back(n.inputs.back());
    }
    for (size_t i = 0; i < outputs; ++i) n.outputs.push_back(g.add_value("out" + std::to_string(i)));
    g.nodes = {n};
    g.outputs = n.outputs;
    return ir::infer_shapes(g);
  };
  const ir::Attribute gate = ir::Attribute::make_int(1);
  EXPECT_TRUE(infer({{2, 8}, {}, {8, 4}, {8, 6}}, 2).ok());
  EXPECT_TRUE(infer({{2, 8}, {8}, {8, 4}, {8, 4}}, 2, {{"gate", gate}}).ok()) << "gate + scratch";
  EXPECT_TRUE(infer({{2, 8}, {8}, {8, 4}}, 2).ok()) << "a normalized group of one";
  EXPECT_FALSE(infer({{2, 8}, {8}, {8, 4}}, 1).ok()) << "the scratch output is missing";
  EXPECT_FALSE(infer({{2, 8}, {}, {8, 4}, {8, 4}, {8, 4}}, 1, {{"gate", gate}}).ok()) << "a gate of three";
  EXPECT_FALSE(infer({{2, 8}, {}, {8, 4}, {8, 6}}, 2, {{"gate", gate}}).ok()) << "gated Ns differ";
  EXPECT_FALSE(infer({{2, 8}, {}, {}, {8, 4}}, 1).ok()) << "a weight after an absent one";
  EXPECT_FALSE(infer({{2, 8}, {}, {7, 4}}, 1).ok()) << "W's K is not A's";
  EXPECT_FALSE(infer({{2, 8}, {4}, {8, 4}}, 2).ok()) << "a scale that is not [K]";
  EXPECT_FALSE(infer({{2, 8}, {}, {8, 4}, {}, {}, {}, {5}}, 1).ok()) << "a bias without its weight";
  EXPECT_FALSE(infer({{2, 8}, {}, {8, 4}}, 1, {{"gate", ir::Attribute::make_int(2)}}).ok()) << "gate 2";
  // By hand: one row [1, 2] by two weights with a bias on the second.
  ir::Node n = make_node(ops::kMatMulGroup, 7, 2);
  n.inputs = {0, ir::kNoValue, 2, 3, ir::kNoValue, ir::kNoValue, 6};
  auto out = run_ok(n, {f32({1, 2}, {1, 2}), Tensor(), f32({2, 1}, {3, 4}), f32({2, 2}, {1, 0, 0, 1}), Tensor(),
                        Tensor(), f32({2}, {10, 20})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{11}));
  EXPECT_EQ(values_f32(out[1]), (std::vector<float>{11, 22}));

  // Rotary tables (inputs 8..11) and rotary_dim.
  const ir::Attribute d4 = ir::Attribute::make_int(4);
  const Dims no{};
  EXPECT_TRUE(infer({{2, 8}, no, {8, 4}, {8, 8}, no, no, no, no, {2, 4}, {2, 4}, {1, 2, 1, 4}, {1, 2, 1, 4}}, 2,
                    {{"rotary_dim", d4}})
                  .ok());
  EXPECT_FALSE(infer({{2, 8}, no, {8, 4}, no, no, no, no, no, {2, 4}}, 1, {{"rotary_dim", d4}}).ok()) << "cos alone";
  EXPECT_FALSE(infer({{2, 8}, no, {8, 4}, no, no, no, no, no, {2, 4}, {2, 4}}, 1).ok()) << "tables without rotary_dim";
  EXPECT_FALSE(infer({{2, 8}, no, {8, 4}}, 1, {{"rotary_dim", d4}}).ok()) << "rotary_dim without tables";
  EXPECT_FALSE(infer({{2, 8}, no, {8, 6}, no, no, no, no, no, {2, 6}, {2, 6}}, 1,
                     {{"rotary_dim", ir::Attribute::make_int(3)}})
                   .ok())
      << "an odd rotary_dim";
  EXPECT_FALSE(infer({{2, 8}, no, {8, 6}, no, no, no, no, no, {2, 4}, {2, 4}}, 1, {{"rotary_dim", d4}}).ok())
      << "6 columns are no whole heads of 4";
  EXPECT_FALSE(infer({{2, 8}, no, {8, 4}, no, no, no, no, no, {2, 3}, {2, 3}}, 1, {{"rotary_dim", d4}}).ok())
      << "tables of 3 columns";
  EXPECT_FALSE(infer({{2, 8}, no, {8, 4}, no, no, no, no, no, {2, 4}, {1, 4}}, 1, {{"rotary_dim", d4}}).ok())
      << "cos and sin of different dims";
  EXPECT_FALSE(infer({{2, 8}, no, {8, 4}, no, no, no, no, no, no, no, {2, 4}, {2, 4}}, 1, {{"rotary_dim", d4}}).ok())
      << "tables of a product without a weight";
  EXPECT_FALSE(infer({{2, 8}, no, {8, 4}, {8, 4}, no, no, no, no, {2, 4}, {2, 4}}, 2,
                     {{"gate", gate}, {"rotary_dim", d4}})
                   .ok())
      << "a gated group";
  // By hand: x = [1, 2, 3, 4] by the identity, cos 0 and sin 1: rotate_half(x) = [-3, -4, 1, 2].
  ir::Node r = make_node(ops::kMatMulGroup, 10, 1);
  r.inputs = {0, ir::kNoValue, 2, ir::kNoValue, ir::kNoValue, ir::kNoValue, ir::kNoValue, ir::kNoValue, 8, 9};
  r.attrs["rotary_dim"] = d4;
  const Tensor eye = f32({4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  std::vector<Tensor> ins = {f32({1, 4}, {1, 2, 3, 4}), Tensor(), eye,      Tensor(), Tensor(),
                             Tensor(),                 Tensor(), Tensor(), f32({1, 4}, {0, 0, 0, 0}),
                             f32({1, 4}, {1, 1, 1, 1})};
  out = run_ok(r, ins);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-3, -4, 1, 2}));
  // Three rows cannot repeat tables of two.
  ins[0] = f32({3, 4}, std::vector<float>(12, 1.f));
  ins[8] = f32({2, 4}, std::vector<float>(8, 0.f)), ins[9] = f32({2, 4}, std::vector<float>(8, 1.f));
  auto refused = ops::evaluate_on_host(r, ins);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("do not repeat whole"), std::string::npos) << refused.status().to_string();
}

}  // namespace
}  // namespace streamrt::builder
