// The transformers corpus (tests/corpus/transformers) lowers attention the way hand-written graphs
// do: one Attention step per layer, with the exporters' idioms around it folded in (the NaN guard
// after the softmax, K^T through a flattened batch, repeat_kv for grouped- and multi-query
// attention). Outputs of the same builds are checked against PyTorch by the corpus conformance tests
// (tests/onnx_tests.cmake) and by decode_loop_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "onnx/onnx_pb.h"
#include "onnx/tensor_proto.h"
#include "plan/plan.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;

std::string corpus(const std::string& name) {
  return std::string(STREAMRT_SOURCE_DIR) + "/tests/corpus/transformers/" + name;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The dims the model declares symbolic (dim_param or unset), per input.
Result<std::map<std::string, std::vector<bool>>> symbolic_dims(const std::string& model) {
  onnx::ModelProto m;
  if (!m.ParseFromString(read_file(model))) return invalid_argument("cannot parse " + model);
  std::map<std::string, std::vector<bool>> out;
  for (const auto& in : m.graph().input())
    for (const auto& d : in.type().tensor_type().shape().dim()) out[in.name()].push_back(!d.has_dim_value());
  return out;
}

// A build at the first test set's input dims: fixed, or (dynamic) a profile from 1 to twice those
// dims over every dim the model leaves symbolic, so fusions must hold at every size.
Result<std::vector<uint8_t>> build_at_test_shapes(const std::string& dir, bool dynamic) {
  BuilderConfig config;
  SRT_ASSIGN_OR_RETURN(auto symbolic, symbolic_dims(dir + "/model.onnx"));
  for (const auto& e : fs::directory_iterator(dir + "/test_data_set_0")) {
    if (e.path().filename().string().rfind("input_", 0) != 0) continue;
    onnx::TensorProto t;
    if (!t.ParseFromString(read_file(e.path()))) return invalid_argument("cannot parse " + e.path().string());
    Dims d(t.dims().begin(), t.dims().end()), lo = d, hi = d;
    for (size_t i = 0; dynamic && i < d.size() && i < symbolic[t.name()].size(); ++i)
      if (symbolic[t.name()][i]) lo[i] = 1, hi[i] = 2 * d[i];
    config.profiles[t.name()] = ShapeProfile{lo, d, hi};
  }
  return build_plan_from_onnx(dir + "/model.onnx", config);
}

// A test data file as (its tensor name, the tensor).
Result<std::pair<std::string, Tensor>> read_pb(const fs::path& path) {
  onnx::TensorProto t;
  if (!t.ParseFromString(read_file(path))) return invalid_argument("cannot parse " + path.string());
  SRT_ASSIGN_OR_RETURN(Tensor x, onnx_import::tensor_from_proto(t, path.parent_path().string()));
  return std::make_pair(t.name(), std::move(x));
}

// Runs the plan on the CPU on test_data_set_0 and compares every float output with PyTorch's.
void expect_reference_outputs(const std::string& dir, std::vector<uint8_t> bytes) {
  auto engine = Runtime::create({DeviceType::kCpu}).value()->load_engine_bytes(std::move(bytes));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  const std::string set = dir + "/test_data_set_0/";
  std::vector<Tensor> inputs;
  for (int i = 0; fs::exists(set + "input_" + std::to_string(i) + ".pb"); ++i) {
    auto x = read_pb(set + "input_" + std::to_string(i) + ".pb");
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    const auto& [name, t] = *x;
    inputs.push_back(t);
    ASSERT_TRUE((*ctx)->set_input_shape(name, t.dims()).ok()) << name;
    ASSERT_TRUE((*ctx)->set_tensor_address(name, const_cast<void*>(inputs.back().data()), t.nbytes()).ok());
  }
  std::vector<std::pair<TensorDesc, std::vector<uint8_t>>> outs;
  for (const TensorDesc& d : (*engine)->io_tensors()) {
    if (d.is_input) continue;
    auto shape = (*ctx)->tensor_shape(d.name);
    ASSERT_TRUE(shape.ok()) << d.name;
    outs.emplace_back(d, std::vector<uint8_t>(static_cast<size_t>(dims_numel(*shape)) * dtype_size(d.dtype)));
    ASSERT_TRUE((*ctx)->set_tensor_address(d.name, outs.back().second.data(), outs.back().second.size()).ok());
  }
  ASSERT_TRUE((*ctx)->execute().ok());
  for (size_t o = 0; o < outs.size(); ++o) {
    auto read = read_pb(set + "output_" + std::to_string(o) + ".pb");
    ASSERT_TRUE(read.ok()) << read.status().to_string();
    const Tensor* want = &read->second;
    if (want->dtype() != DataType::kFloat32 || outs[o].first.dtype != DataType::kFloat32) continue;
    ASSERT_EQ(static_cast<size_t>(want->nbytes()), outs[o].second.size()) << outs[o].first.name;
    const float* got = reinterpret_cast<const float*>(outs[o].second.data());
    for (int64_t i = 0; i < want->numel(); ++i) {
      const float w = want->data_as<float>()[i];
      ASSERT_NEAR(got[i], w, 1e-4f + 1e-3f * std::abs(w)) << outs[o].first.name << " element " << i;
    }
  }
}

std::map<std::string, int> step_counts(const std::vector<uint8_t>& bytes) {
  auto plan = plan::read_plan_bytes(bytes.data(), bytes.size(), nullptr);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  std::map<std::string, int> n;
  if (plan.ok())
    for (const auto& s : plan->data.steps) ++n[s.op_type];
  return n;
}

struct Case {
  const char* name;
  int64_t kv_group;  // query heads per key/value head in its config
  bool dynamic = false;  // built over a profile of every symbolic dim, not at the test shapes
};

class TransformersAttention : public ::testing::TestWithParam<Case> {};

TEST_P(TransformersAttention, OneAttentionStepPerLayerWithoutRepeatKvOrNanGuard) {
  const Case c = GetParam();
  auto bytes = build_at_test_shapes(corpus(c.name), c.dynamic);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  // A dynamic-profile plan at the test shapes computes PyTorch's outputs (the fixed-shape builds
  // are checked by the corpus conformance tests).
  if (c.dynamic) expect_reference_outputs(corpus(c.name), *bytes);
  auto n = step_counts(*bytes);
  EXPECT_EQ(n["Attention"], 2) << "two layers, one Attention each";
  EXPECT_EQ(n["Softmax"], 0);
  EXPECT_EQ(n["IsNaN"], 0);
  auto plan = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(plan.ok());
  std::map<std::string, const ir::Node*> producer;
  for (const auto& s : plan->data.steps)
    for (const auto& o : s.outputs) producer[plan->data.values[o].name] = &s;
  for (const auto& s : plan->data.steps) {
    if (s.op_type != "Attention") continue;
    EXPECT_EQ(s.attr_int("kv_group", 1).value(), c.kv_group) << s.name;
    EXPECT_EQ(s.attr_int("nan_to_zero", 0).value(), 1) << s.name;
    for (int kv : {1, 2}) {  // K and V come from their projections (or the cache), not from a copy per head
      std::string ops;  // producers up through views (Reshape / Unsqueeze)
      for (std::string v = plan->data.values[s.inputs[kv]].name; producer.count(v);) {
        const ir::Node* p = producer[v];
        ops += p->op_type + " ";
        if (p->op_type != "Reshape" && p->op_type != "Unsqueeze") break;
        v = plan->data.values[p->inputs[0]].name;
      }
      EXPECT_EQ(ops.find("Expand"), std::string::npos) << s.name << ": " << ops;
    }
  }
}

// Llama, Qwen2, Mistral, Phi-3: 4 query heads over 2 key/value heads; Gemma: multi-query (1). The
// TorchScript decode step groups the query heads itself (Q reshaped to [B, Hkv, G, S, D], K and V
// broadcast), so it needs no kv_group.
INSTANTIATE_TEST_SUITE_P(Corpus, TransformersAttention,
                         ::testing::Values(Case{"llama_dynamo", 2}, Case{"llama_torchscript", 2},
                                           Case{"qwen2_dynamo", 2}, Case{"mistral_dynamo", 2},
                                           Case{"phi3_dynamo", 2}, Case{"gemma_dynamo", 4},
                                           Case{"llama_decode_dynamo", 2}, Case{"llama_decode_torchscript", 1},
                                           Case{"llama_dynamo", 2, true}, Case{"qwen2_dynamo", 2, true},
                                           Case{"gemma_dynamo", 4, true}, Case{"llama_torchscript", 2, true},
                                           Case{"llama_decode_dynamo", 2, true}),
                         [](const auto& info) {
                           return std::string(info.param.name) + (info.param.dynamic ? "_dynamic" : "");
                         });

// Steps of one layer: those after the first Attention up to and including the second (o_proj,
// the MLP, the next layer's norm, projections, rotary and its attention), by op type.
std::map<std::string, int> layer_histogram(const plan::PlanData& plan) {
  std::map<std::string, int> h;
  int attentions = 0;
  for (const auto& s : plan.steps) {
    if (attentions == 1) ++h[s.op_type];
    if (s.op_type == "Attention" && ++attentions == 2) break;
  }
  return h;
}

// Steps that launch work: all but Reshape, which only relabels dims here (a view, aliased).
int kernels(const std::map<std::string, int>& h) {
  int n = 0;
  for (const auto& [op, count] : h)
    if (op != "Reshape") n += count;
  return n;
}

std::string histogram_text(const std::map<std::string, int>& h) {
  std::string out;
  for (const auto& [op, count] : h) out += "  " + op + " " + std::to_string(count) + "\n";
  return out;
}

// A decode step's head as generate() exports it (logits_to_keep=1: the TorchScript export slices the last
// position's row out of the final norm's output): the norm rides in the head's MatMulGroup at dynamic
// shapes too, where the Slice is a real selection (builder/simplify.cc: slices_before_norms).
TEST(TransformersHead, DecodeHeadGroupsWithTheFinalNormOverAProfile) {
  for (const char* name : {"llama_decode_torchscript", "llama_decode_dynamo"}) {
    auto bytes = build_at_test_shapes(corpus(name), true);
    ASSERT_TRUE(bytes.ok()) << name << ": " << bytes.status().to_string();
    expect_reference_outputs(corpus(name), *bytes);
    auto plan = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
    ASSERT_TRUE(plan.ok());
    int norms = 0;
    const ir::Node* head = nullptr;
    for (const auto& s : plan->data.steps) {
      norms += s.op_type == "RMSNormalization";
      for (int32_t o : s.outputs)
        if (o >= 0 && plan->data.values[o].name == "logits") head = &s;
    }
    EXPECT_EQ(norms, 0) << name;
    ASSERT_NE(head, nullptr) << name;
    EXPECT_EQ(head->op_type, "MatMulGroup") << name;
  }
}

struct MaskCase {
  const char* name;
  bool dynamic;
  int64_t window = 0;    // the config's sliding window (Mistral)
  int causal = 1;        // 1: decoders; 0: BERT attends both ways; -1: a decode step (one query sees
                         // every key up to its own position: causal is moot and may be dropped)
  int max_kernels = 6;  // per layer: a MatMulGroup for Q / K / V with the input norm, Rotary (Q and K), Attention,
                        // o_proj's MatMul (with the residual), a MatMulGroup for gate / up with the post-
                        // attention norm and SwiGLU's gate, down_proj's MatMul (with the residual); a
                        // decode step adds the two cache Concats
};

class TransformersMasks : public ::testing::TestWithParam<MaskCase> {};

// The [B, 1, Sq, Skv] mask built from attention_mask (causal, padding, sliding window) becomes the
// Attention op's causal flag, window and key_mask (attention_mask itself): no mask steps remain,
// each layer lowers to 6 steps that launch work (plus Reshape views; no Add: the residuals ride in
// the GEMMs; no RMSNormalization: the norms ride in the MatMulGroups), and the plan computes
// PyTorch's outputs, padded rows included.
TEST_P(TransformersMasks, MaskBecomesCausalWindowAndKeyMask) {
  const MaskCase c = GetParam();
  auto bytes = build_at_test_shapes(corpus(c.name), c.dynamic);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  expect_reference_outputs(corpus(c.name), *bytes);
  auto plan = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(plan.ok());
  std::map<std::string, int> all;
  int attentions = 0;
  for (const auto& s : plan->data.steps) {
    ++all[s.op_type];
    if (s.op_type != "Attention") continue;
    ++attentions;
    EXPECT_TRUE(s.inputs.size() < 4 || s.inputs[3] < 0) << s.name << ": still reads a mask tensor";
    ASSERT_EQ(s.inputs.size(), 5u) << s.name << ": no key_mask";
    EXPECT_EQ(plan->data.values[s.inputs[4]].name, "attention_mask") << s.name;
    if (c.causal >= 0) EXPECT_EQ(s.attr_int("causal", 0).value(), c.causal) << s.name;
    EXPECT_EQ(s.attr_int("window", 0).value(), c.window) << s.name;
  }
  EXPECT_EQ(attentions, 2);
  for (const char* op : {"Where", "Expand", "Trilu", "GatherND", "LessOrEqual", "Greater", "And", "Softmax", "IsNaN"})
    EXPECT_EQ(all[op], 0) << op << " steps remain";
  const auto layer = layer_histogram(plan->data);
  std::cout << c.name << (c.dynamic ? " (dynamic)" : "") << ": " << plan->data.steps.size() << " steps, "
            << kernels(layer) << " per layer besides Reshape views:\n"
            << histogram_text(layer);
  EXPECT_LE(kernels(layer), c.max_kernels) << histogram_text(layer);
  EXPECT_EQ(layer.count("Add"), 0u) << "a residual Add was left out of its MatMul:\n" << histogram_text(layer);
  if (c.causal != 0) {
    // Rotary models: a layer's Q and K rotate in their Q / K / V group (fold_group_rotaries.cc), at
    // static and dynamic dims.
    int rotating_groups = 0;
    for (const auto& s : plan->data.steps) {
      if (s.op_type == "Rotary") EXPECT_EQ(s.outputs.size(), 2u) << s.name;
      if (s.op_type == "MatMulGroup" && s.attr_int("rotary_dim", 0).value() > 0) {
        ++rotating_groups;
        EXPECT_GE(s.inputs.size(), 12u) << s.name << ": Q and K both rotated";
      }
    }
    EXPECT_EQ(rotating_groups, attentions) << "a Rotary step was left:\n" << histogram_text(layer);
  }
  EXPECT_EQ(layer.count("RMSNormalization"), 0u) << "a norm was left out of its MatMulGroup:\n" << histogram_text(layer);
  if (c.causal != 0) {
    // The final norm rides in the LM head's group too, also where a decode step slices the last token's
    // row out first (simplify.cc: slices_before_norms).
    EXPECT_EQ(all["RMSNormalization"], 0) << "the final norm is a step of its own";
    for (const auto& s : plan->data.steps)
      for (int32_t o : s.outputs)
        if (o >= 0 && plan->data.values[o].name == "logits") EXPECT_EQ(s.op_type, "MatMulGroup") << s.name;
  }
}

// TorchScript names every input's dims apart: over a dynamic batch the decode step's queries take
// theirs from input_ids and position_ids together (the rotary tables broadcast), so the mask's batch
// cannot be proven theirs and the mask stays there (covered at fixed shapes).
INSTANTIATE_TEST_SUITE_P(Corpus, TransformersMasks,
                         ::testing::Values(MaskCase{"llama_dynamo", false}, MaskCase{"llama_dynamo", true},
                                           MaskCase{"llama_torchscript", false}, MaskCase{"llama_torchscript", true},
                                           MaskCase{"llama_decode_dynamo", false, 0, -1, 9},
                                           MaskCase{"llama_decode_dynamo", true, 0, -1, 9},
                                           MaskCase{"llama_decode_torchscript", false, 0, -1, 9},
                                           MaskCase{"mistral_dynamo", true, 4}, MaskCase{"mistral_torchscript", true, 4},
                                           MaskCase{"qwen2_torchscript", true},
                                           // Gemma's gate (GeGLU, tanh-approximate Gelu times up) stays
                                           // two steps after its MatMulGroup
                                           MaskCase{"gemma_torchscript", true, 0, 1, 9},
                                           // Q / K / V grouped; LayerNorms, the FFN and its Gelu apart
                                           MaskCase{"bert_dynamo", true, 0, 0, 8}),
                         [](const auto& info) {
                           return std::string(info.param.name) + (info.param.dynamic ? "_dynamic" : "");
                         });

}  // namespace
}  // namespace streamrt
