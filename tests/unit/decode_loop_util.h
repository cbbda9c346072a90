// Greedy decoding with the KV-cache decoders exported from transformers in the layout transformers /
// optimum use (tests/corpus/transformers/llama_decode_*: past_key_values.N.key / value in,
// present.N.key / value out, left-padded attention_mask, position_ids), on any device: each step's
// presents are the next step's pasts (the device buffers are handed over, never copied through the
// host), and every step's logits and greedy token must match a full-sequence PyTorch forward without
// a cache (decode_loop/*.npy, written by scripts/export_corpus.py). Built with the KV cache in place
// (BuilderConfig::kv_cache_in_place), no Concat copies the cache and one buffer per past / present
// pair, of the plan's capacity, is bound to both at every step. Used by tests/unit/decode_loop_test.cc
// (CPU) and tests/gpu/kv_cache_gpu_test.cc (CUDA).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>

#include "core/npy.h"
#include "plan/plan.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::testing {

struct DecodeLoopParam {
  const char* exporter;
  bool streamed;
  bool in_place = false;
};

// A test name: dynamo_resident, torchscript_streamed_in_place, ...
inline std::string decode_loop_name(const ::testing::TestParamInfo<DecodeLoopParam>& info) {
  return std::string(info.param.exporter) + (info.param.streamed ? "_streamed" : "_resident") +
         (info.param.in_place ? "_in_place" : "");
}

inline std::string decode_case_dir(const DecodeLoopParam& p) {
  return std::string(STREAMRT_SOURCE_DIR) + "/tests/corpus/transformers/llama_decode_" + p.exporter;
}

// The corpus's decode_loop folder: the step's host inputs by name (the pasts: the prompt's cache) and the
// expected logits [steps, B, vocab] and tokens [steps, B]. An error names the file that is missing or malformed,
// so a test stops on it instead of indexing an empty tensor.
struct DecodeLoopData {
  std::map<std::string, Tensor> feeds;
  Tensor want_logits, want_tokens;
};

inline Result<DecodeLoopData> load_decode_loop(const std::string& loop) {
  if (!std::filesystem::is_directory(loop))
    return not_found(loop + " is missing: run scripts/export_corpus.py --only llama_decode");
  DecodeLoopData d;
  for (const auto& e : std::filesystem::directory_iterator(loop)) {
    const std::string stem = e.path().stem().string();
    if (stem.rfind("expected_", 0) == 0) continue;
    SRT_ASSIGN_OR_RETURN(d.feeds[stem], load_npy(e.path().string()));
  }
  SRT_ASSIGN_OR_RETURN(d.want_logits, load_npy(loop + "expected_logits.npy"));
  SRT_ASSIGN_OR_RETURN(d.want_tokens, load_npy(loop + "expected_tokens.npy"));
  if (d.want_logits.dims().size() != 3 || d.want_tokens.dims().size() != 2)
    return invalid_argument(loop + ": expected_logits wants [steps, B, vocab], expected_tokens [steps, B]");
  return d;
}

// A profile that covers the loop: batch 1..4, past length 1..63 and the mask over past + 1 new token
// 2..64. The ranges must agree with each other: shape inference at the max runs the graph's own
// index arithmetic on them (a mask longer than past + 1 indexes past the end of its tables).
inline ShapeProfile decode_profile_for(const std::string& name, const Dims& d) {
  ShapeProfile p{d, d, d};
  p.min[0] = 1, p.max[0] = 4;
  if (name == "attention_mask") p.min[1] = 2, p.max[1] = 64;
  if (name.rfind("past_key_values.", 0) == 0) p.min[2] = 1, p.max[2] = 63;
  return p;
}

inline Tensor append_one(const Tensor& mask) {
  const Dims& d = mask.dims();
  std::vector<int64_t> v;
  for (int64_t b = 0; b < d[0]; ++b) {
    for (int64_t i = 0; i < d[1]; ++i) v.push_back(mask.data_as<int64_t>()[b * d[1] + i]);
    v.push_back(1);
  }
  return Tensor::from_vector(DataType::kInt64, {d[0], d[1] + 1}, v);
}

// No Concat step of the plan reads a past input or writes a present output: the cache is appended
// to in place (KvAppend), never copied.
inline void expect_no_cache_concat(const std::vector<uint8_t>& bytes) {
  auto holder = std::make_shared<std::vector<uint8_t>>(bytes);
  auto p = plan::read_plan_bytes(holder->data(), holder->size(), holder);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  size_t appends = 0;
  for (const ir::Node& s : p->data.steps) {
    appends += s.op_type == "KvAppend";
    if (s.op_type != "Concat") continue;
    for (int32_t v : s.inputs)
      EXPECT_NE(p->data.values[v].name.rfind("past_key_values.", 0), 0u) << s.name << " concatenates the cache";
    for (int32_t v : s.outputs)
      EXPECT_NE(p->data.values[v].name.rfind("present.", 0), 0u) << s.name << " copies the cache";
  }
  EXPECT_EQ(appends, 4u);
}

inline Result<DeviceBuffer> upload(DeviceType device, const void* data, size_t bytes) {
  SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(device, std::max<size_t>(bytes, 1)));
  SRT_RETURN_IF_ERROR(b.copy_from_host(data, bytes));
  return b;
}

inline void run_decode_loop(const DecodeLoopParam& p, DeviceType device) {
  const std::string dir = decode_case_dir(p);
  auto data = load_decode_loop(dir + "/decode_loop/");
  ASSERT_TRUE(data.ok()) << data.status().message();
  auto& [feeds, want_logits, want_tokens] = *data;
  const int64_t steps = want_logits.dims()[0], batch = want_logits.dims()[1], vocab = want_logits.dims()[2];

  BuilderConfig config;
  config.device = device;
  for (const auto& [name, t] : feeds) config.profiles[name] = decode_profile_for(name, t.dims());
  config.weight_streaming = p.streamed;
  config.min_streamable_bytes = 1;
  config.kv_cache_in_place = p.in_place;
  BuildReport report;
  auto plan = build_plan_from_onnx(dir + "/model.onnx", config, &report);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::map<std::string, Dims> past_dims;  // the caches stay on the device: only their dims are tracked here
  for (const auto& [name, t] : feeds)
    if (name.rfind("past_key_values.", 0) == 0) past_dims[name] = t.dims();
  if (p.in_place) {
    EXPECT_EQ(report.kv_pairs_in_place, past_dims.size());
    EXPECT_EQ(report.kv_capacity, 64);  // present's length at the profile's max: 63 cached + 1 new
    expect_no_cache_concat(*plan);
  }
  auto rt = Runtime::create({device});
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto engine = (*rt)->load_engine_bytes(std::move(plan).value());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  if (p.streamed) {
    ASSERT_GT((*engine)->streamable_weights_size(), 0u);
    ASSERT_TRUE((*engine)->set_weight_streaming_budget(0).ok());
  }
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
  std::map<std::string, TensorDesc> desc;
  for (const TensorDesc& d : (*engine)->io_tensors()) desc[d.name] = d;

  // The pasts on the device, in the plan's layout: in place one buffer of the capacity per pair
  // (bound to past and present), else the previous step's present buffer.
  std::map<std::string, DeviceBuffer> cache;
  for (const auto& [name, dims] : past_dims) {
    const TensorDesc& d = desc.at(name);
    EXPECT_EQ(d.seq_capacity, p.in_place ? 64 : 0) << name;
    std::vector<uint8_t> stored(d.storage_bytes(dims));
    ASSERT_TRUE(pack_to_storage(d, dims, feeds.at(name).data(), stored.data()).ok());
    auto b = upload(device, stored.data(), stored.size());
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    cache[name] = std::move(b).value();
  }
  for (int64_t step = 0; step < steps; ++step) {
    std::map<std::string, DeviceBuffer> bound;  // this step's other inputs and its outputs
    for (const auto& [name, t] : feeds) {
      if (past_dims.count(name)) continue;
      ASSERT_TRUE((*ctx)->set_input_shape(name, t.dims()).ok()) << name;
      auto b = upload(device, t.data(), t.nbytes());
      ASSERT_TRUE(b.ok());
      ASSERT_TRUE((*ctx)->set_tensor_address(name, b->data(), b->size()).ok()) << name;
      bound[name] = std::move(b).value();
    }
    for (const auto& [name, dims] : past_dims) {
      ASSERT_TRUE((*ctx)->set_input_shape(name, dims).ok()) << name;
      ASSERT_TRUE((*ctx)->set_tensor_address(name, cache.at(name).data(), cache.at(name).size()).ok()) << name;
    }
    for (const TensorDesc& d : (*engine)->io_tensors()) {
      if (d.is_input) continue;
      const bool present = d.name.rfind("present.", 0) == 0;
      if (p.in_place && present) {
        const DeviceBuffer& c = cache.at("past_key_values." + d.name.substr(8));
        ASSERT_TRUE((*ctx)->set_tensor_address(d.name, c.data(), c.size()).ok()) << d.name;
        continue;
      }
      auto shape = (*ctx)->tensor_shape(d.name);
      ASSERT_TRUE(shape.ok()) << d.name;
      auto b = DeviceBuffer::allocate(device, d.storage_bytes(*shape));
      ASSERT_TRUE(b.ok());
      ASSERT_TRUE((*ctx)->set_tensor_address(d.name, b->data(), b->size()).ok());
      bound[d.name] = std::move(b).value();
    }
    ASSERT_TRUE((*ctx)->execute().ok()) << "step " << step;

    std::vector<float> logits(static_cast<size_t>(batch * vocab));  // [B, 1, vocab]
    ASSERT_TRUE(bound.at("logits").copy_to_host(logits.data(), logits.size() * sizeof(float)).ok());
    std::vector<int64_t> next(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = logits.data() + b * vocab;
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
    for (auto& [name, dims] : past_dims) {
      ++dims[2];
      if (!p.in_place) cache[name] = std::move(bound.at("present." + name.substr(16)));  // handed over
    }
  }
}

}  // namespace streamrt::testing
