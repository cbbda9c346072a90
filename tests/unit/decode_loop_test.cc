// Greedy decoding with KV-cache decoders exported from transformers in the layout transformers /
// optimum use (tests/corpus/transformers/llama_decode_*: past_key_values.N.key / value in,
// present.N.key / value out, left-padded attention_mask, position_ids). Each step's presents are the
// next step's pasts (the buffers are handed over, not copied), and every step's logits and greedy
// token match a full-sequence PyTorch forward without a cache (decode_loop/*.npy, written by
// scripts/export_corpus.py). Run resident and with every weight streamed at budget 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>

#include "core/npy.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;

struct Param {
  const char* exporter;
  bool streamed;
};

std::string case_dir(const Param& p) {
  return std::string(STREAMRT_SOURCE_DIR) + "/tests/corpus/transformers/llama_decode_" + p.exporter;
}

Tensor load(const std::string& path) {
  auto t = load_npy(path);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t).value() : Tensor{};
}

// A profile that covers the loop: batch 1..4, past length 1..63 and the mask over past + 1 new token
// 2..64. The ranges must agree with each other: shape inference at the max runs the graph's own
// index arithmetic on them (a mask longer than past + 1 indexes past the end of its tables).
ShapeProfile profile_for(const std::string& name, const Dims& d) {
  ShapeProfile p{d, d, d};
  p.min[0] = 1, p.max[0] = 4;
  if (name == "attention_mask") p.min[1] = 2, p.max[1] = 64;
  if (name.rfind("past_key_values.", 0) == 0) p.min[2] = 1, p.max[2] = 63;
  return p;
}

Tensor append_one(const Tensor& mask) {
  const Dims& d = mask.dims();
  std::vector<int64_t> v;
  for (int64_t b = 0; b < d[0]; ++b) {
    for (int64_t i = 0; i < d[1]; ++i) v.push_back(mask.data_as<int64_t>()[b * d[1] + i]);
    v.push_back(1);
  }
  return Tensor::from_vector(DataType::kInt64, {d[0], d[1] + 1}, v);
}

class DecodeLoop : public ::testing::TestWithParam<Param> {};

TEST_P(DecodeLoop, PresentsFedBackMatchFullSequenceForward) {
  const Param p = GetParam();
  const std::string dir = case_dir(p), loop = dir + "/decode_loop/";
  ASSERT_TRUE(fs::exists(loop)) << loop << " is missing: run scripts/export_corpus.py --only llama_decode";
  // The step's inputs by name; the pasts become views of the previous step's present buffers.
  std::map<std::string, Tensor> feeds;
  for (const auto& e : fs::directory_iterator(loop)) {
    const std::string stem = e.path().stem().string();
    if (stem.rfind("expected_", 0) != 0) feeds[stem] = load(e.path().string());
  }
  const Tensor want_logits = load(loop + "expected_logits.npy");   // [steps, B, vocab]
  const Tensor want_tokens = load(loop + "expected_tokens.npy");   // [steps, B]
  const int64_t steps = want_logits.dims()[0], batch = want_logits.dims()[1], vocab = want_logits.dims()[2];

  BuilderConfig config;
  for (const auto& [name, t] : feeds) config.profiles[name] = profile_for(name, t.dims());
  config.weight_streaming = p.streamed;
  config.min_streamable_bytes = 1;
  auto plan = build_plan_from_onnx(dir + "/model.onnx", config);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto rt = Runtime::create({DeviceType::kCpu});
  ASSERT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(std::move(plan).value());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  if (p.streamed) {
    ASSERT_GT((*engine)->streamable_weights_size(), 0u);
    ASSERT_TRUE((*engine)->set_weight_streaming_budget(0).ok());
  }
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok());

  std::map<std::string, std::shared_ptr<std::vector<uint8_t>>> outs;
  for (int64_t step = 0; step < steps; ++step) {
    for (auto& [name, t] : feeds) {
      ASSERT_TRUE((*ctx)->set_input_shape(name, t.dims()).ok()) << name;
      ASSERT_TRUE((*ctx)->set_tensor_address(name, const_cast<void*>(t.data()), t.nbytes()).ok()) << name;
    }
    outs.clear();
    for (const TensorDesc& d : (*engine)->io_tensors()) {
      if (d.is_input) continue;
      auto shape = (*ctx)->tensor_shape(d.name);
      ASSERT_TRUE(shape.ok()) << d.name;
      auto& buf = outs[d.name];
      buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(dims_numel(*shape)) * dtype_size(d.dtype));
      ASSERT_TRUE((*ctx)->set_tensor_address(d.name, buf->data(), buf->size()).ok());
    }
    ASSERT_TRUE((*ctx)->execute().ok()) << "step " << step;

    const float* logits = reinterpret_cast<const float*>(outs.at("logits")->data());  // [B, 1, vocab]
    std::vector<int64_t> next(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = logits + b * vocab;
      const float* want = want_logits.data_as<float>() + (step * batch + b) * vocab;
      for (int64_t v = 0; v < vocab; ++v)
        ASSERT_NEAR(row[v], want[v], 1e-4f + 1e-3f * std::abs(want[v])) << "step " << step << " row " << b << " logit " << v;
      next[static_cast<size_t>(b)] = std::max_element(row, row + vocab) - row;
      EXPECT_EQ(next[static_cast<size_t>(b)], want_tokens.data_as<int64_t>()[step * batch + b]) << "step " << step;
    }
    // The next step: its token, one more mask position, the next position, and the presents as pasts.
    feeds["input_ids"] = Tensor::from_vector(DataType::kInt64, {batch, 1}, next);
    feeds["attention_mask"] = append_one(feeds["attention_mask"]);
    std::vector<int64_t> pos(feeds["position_ids"].data_as<int64_t>(), feeds["position_ids"].data_as<int64_t>() + batch);
    for (auto& x : pos) ++x;
    feeds["position_ids"] = Tensor::from_vector(DataType::kInt64, {batch, 1}, pos);
    for (auto& [name, t] : feeds) {
      if (name.rfind("past_key_values.", 0) != 0) continue;
      const std::string present = "present." + name.substr(16);
      Dims d = t.dims();
      ++d[2];
      auto buf = outs.at(present);
      ASSERT_EQ(buf->size(), static_cast<size_t>(dims_numel(d)) * sizeof(float)) << present;
      t = Tensor::view(DataType::kFloat32, d, buf->data(), buf);  // the present's own buffer
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Exports, DecodeLoop,
                         ::testing::Values(Param{"dynamo", false}, Param{"torchscript", false},
                                           Param{"dynamo", true}, Param{"torchscript", true}),
                         [](const auto& info) {
                           return std::string(info.param.exporter) + (info.param.streamed ? "_streamed" : "_resident");
                         });

}  // namespace
}  // namespace streamrt
