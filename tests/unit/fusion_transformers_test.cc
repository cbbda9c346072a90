// The transformers corpus (tests/corpus/transformers) lowers attention the way hand-written graphs
// do: one Attention step per layer, with the exporters' idioms around it folded in (the NaN guard
// after the softmax, K^T through a flattened batch, repeat_kv for grouped- and multi-query
// attention). Outputs of the same builds are checked against PyTorch by the corpus conformance tests
// (tests/onnx_tests.cmake) and by decode_loop_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "onnx/onnx_pb.h"
#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;

std::string corpus(const std::string& name) {
  return std::string(STREAMRT_SOURCE_DIR) + "/tests/corpus/transformers/" + name;
}

// A fixed-shape build at the first test set's input dims.
Result<std::vector<uint8_t>> build_at_test_shapes(const std::string& dir) {
  BuilderConfig config;
  for (const auto& e : fs::directory_iterator(dir + "/test_data_set_0")) {
    if (e.path().filename().string().rfind("input_", 0) != 0) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    onnx::TensorProto t;
    if (!t.ParseFromString(bytes.str())) return invalid_argument("cannot parse " + e.path().string());
    Dims d(t.dims().begin(), t.dims().end());
    config.profiles[t.name()] = ShapeProfile{d, d, d};
  }
  return build_plan_from_onnx(dir + "/model.onnx", config);
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
};

class TransformersAttention : public ::testing::TestWithParam<Case> {};

TEST_P(TransformersAttention, OneAttentionStepPerLayerWithoutRepeatKvOrNanGuard) {
  const Case c = GetParam();
  auto bytes = build_at_test_shapes(corpus(c.name));
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
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
                                           Case{"llama_decode_dynamo", 2}, Case{"llama_decode_torchscript", 1}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace streamrt
