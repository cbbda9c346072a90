// Function ops (src/onnx/functions/): opset-23 Attention and RotaryEmbedding are imported as their
// bodies, and the builder fuses the plain parts back (one Attention step for a 4-D attention, the
// causal rule found from the expanded mask). Outputs are checked against onnxruntime by the
// onnx_function_ops ctest (tests/fixtures/function_ops); this checks structure and errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "onnx/importer.h"
#include "onnx_model_util.h"
#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt {
namespace {
using namespace streamrt::testing;

const std::string kCases = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/function_ops/";

std::vector<ir::Node> plan_steps(const std::string& model) {
  auto bytes = build_plan_from_onnx(model, {});
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return {};
  auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes).value());
  return plan::read_plan_bytes(holder->data(), holder->size(), holder).value().data.steps;
}

size_t count(const std::vector<ir::Node>& steps, const std::string& op) {
  size_t n = 0;
  for (const auto& s : steps) n += s.op_type == op;
  return n;
}

TEST(FunctionOps, PlainAttentionFusesBackIntoOneStep) {
  auto steps = plan_steps(kCases + "attention_4d/model.onnx");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].op_type, "Attention");
  steps = plan_steps(kCases + "attention_4d_causal_scale/model.onnx");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].attr_int("causal", 0).value(), 1);
  EXPECT_NEAR(steps[0].attr_float("scale").value(), 0.2f, 1e-6f);
}

TEST(FunctionOps, GroupedAttentionAndRotaryKeepOneFusedStepEach) {
  auto steps = plan_steps(kCases + "attention_3d_gqa_causal/model.onnx");
  EXPECT_EQ(count(steps, "Attention"), 1u);
  EXPECT_EQ(count(steps, "Softmax"), 0u);
  steps = plan_steps(kCases + "rotary_embedding_4d_positions/model.onnx");
  EXPECT_EQ(count(steps, "Rotary"), 1u);
}

onnx::ModelProto attention23(bool with_heads, const char* extra_op = nullptr) {
  onnx::ModelProto m = make_model(23);
  auto* g = m.mutable_graph();
  constexpr int kF32 = onnx::TensorProto_DataType_FLOAT;
  for (const char* n : {"q", "k", "v"}) add_input(g, n, kF32, {int64_t{1}, int64_t{4}, int64_t{8}});
  add_output(g, "y", kF32, {int64_t{1}, int64_t{4}, int64_t{8}});
  std::string q = "q";
  if (extra_op) {
    add_node(g, extra_op, "mystery", {"q"}, {"q2"});
    q = "q2";
  }
  auto* n = add_node(g, "Attention", "attn", {q, "k", "v"}, {"y"});
  if (with_heads) {
    for (const char* key : {"q_num_heads", "kv_num_heads"}) {
      auto* a = n->add_attribute();
      a->set_name(key);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(2);
    }
  }
  return m;
}

Status import_status(const onnx::ModelProto& m) {
  const std::string bytes = serialize(m);
  return onnx_import::import_onnx_bytes(bytes.data(), bytes.size(), ".").status();
}

TEST(FunctionOps, ErrorsNameTheNodeAndTheProblem) {
  EXPECT_TRUE(import_status(attention23(true)).ok());
  Status st = import_status(attention23(false));
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("node 'attn'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("q_num_heads"), std::string::npos) << st.message();
  // An unknown op upstream: the report lists it (and the Attention it kept from expanding).
  st = import_status(attention23(true, "NoSuchOp"));
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("NoSuchOp (node 'mystery')"), std::string::npos) << st.message();
}

// RotaryEmbedding's own errors: 3-D X without num_heads, an odd rotary_embedding_dim.
TEST(FunctionOps, RotaryEmbeddingErrorsNameTheNode) {
  auto model = [](std::vector<std::pair<const char*, int64_t>> attrs) {
    onnx::ModelProto m = make_model(23);
    auto* g = m.mutable_graph();
    constexpr int kF32 = onnx::TensorProto_DataType_FLOAT;
    add_input(g, "x", kF32, {int64_t{1}, int64_t{3}, int64_t{16}});
    add_input(g, "cos", kF32, {int64_t{1}, int64_t{3}, int64_t{4}});
    add_input(g, "sin", kF32, {int64_t{1}, int64_t{3}, int64_t{4}});
    add_output(g, "y", kF32, {int64_t{1}, int64_t{3}, int64_t{16}});
    auto* n = add_node(g, "RotaryEmbedding", "rope", {"x", "cos", "sin"}, {"y"});
    for (const auto& [key, v] : attrs) {
      auto* a = n->add_attribute();
      a->set_name(key);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
    return m;
  };
  EXPECT_TRUE(import_status(model({{"num_heads", 2}})).ok());
  Status st = import_status(model({}));
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("node 'rope'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("num_heads"), std::string::npos) << st.message();
  st = import_status(model({{"num_heads", 2}, {"rotary_embedding_dim", 3}}));
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("rotary_embedding_dim"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace streamrt
