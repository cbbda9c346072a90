// Shared by the CPU (tests/unit) and GPU (tests/gpu) weight-streaming tests: build the real-model
// fixtures with weight streaming, run them at a budget, return the outputs' bytes.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/byte_size.h"
#include "onnx/tensor_proto.h"
#include "runtime/device_backend.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::testing {

inline const std::string kFixtureModels = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models";

// Inputs of a fixture's first data set, by name.
inline std::map<std::string, Tensor> fixture_inputs(const std::string& model) {
  std::map<std::string, Tensor> in;
  const std::string dir = kFixtureModels + "/" + model + "/test_data_set_0";
  for (int i = 0;; ++i) {
    std::string path = dir + "/input_" + std::to_string(i) + ".pb";
    if (!std::filesystem::exists(path)) break;
    std::string name;
    auto t = onnx_import::load_tensor_pb(path, &name);
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    if (t.ok()) in[name] = std::move(t).value();
  }
  return in;
}

// Builds `model` for `device` at the inputs' shapes, without timed tactics; with streaming,
// weights of 1 KiB and more are streamable so that even the small fixtures stream.
inline Result<std::vector<uint8_t>> build_fixture(const std::string& model, DeviceType device, bool streaming,
                                                  const std::map<std::string, Tensor>& inputs) {
  BuilderConfig c;
  c.device = device;
  c.weight_streaming = streaming;
  c.min_streamable_bytes = 1024;
  // Timed tactics could pick different GEMM algorithms for two builds; the heuristic's choice
  // is the same for both, so the plain and the streaming plan run the same kernels.
  c.tactics = false;
  for (const auto& [name, t] : inputs) c.shapes[name] = t.dims();
  return build_plan_from_onnx(kFixtureModels + "/" + model + "/model.onnx", c);
}

// Runs one execution with the inputs and returns every output's bytes (in io order).
inline Result<std::vector<std::vector<uint8_t>>> run_once(Engine& engine, const std::map<std::string, Tensor>& inputs,
                                                          StreamingStats* stats = nullptr) {
  SRT_ASSIGN_OR_RETURN(auto ctx, engine.create_execution_context());
  std::vector<DeviceBuffer> bufs;
  std::vector<std::pair<TensorDesc, size_t>> outs;
  for (const TensorDesc& d : engine.io_tensors()) {
    if (d.is_input) {
      const Tensor& t = inputs.at(d.name);
      SRT_RETURN_IF_ERROR(ctx->set_input_shape(d.name, t.dims()));
      SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(engine.device(), t.nbytes()));
      SRT_RETURN_IF_ERROR(b.copy_from_host(t.data(), t.nbytes()));
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(d.name, b.data(), t.nbytes()));
      bufs.push_back(std::move(b));
    }
  }
  for (const TensorDesc& d : engine.io_tensors()) {
    if (d.is_input) continue;
    SRT_ASSIGN_OR_RETURN(Dims dims, ctx->tensor_shape(d.name));
    uint64_t bytes = dtype_size(d.dtype);
    for (int64_t x : dims) bytes *= static_cast<uint64_t>(x);
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(engine.device(), bytes));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address(d.name, b.data(), bytes));
    outs.push_back({d, bufs.size()});
    bufs.push_back(std::move(b));
  }
  ctx->set_streaming_profiling(true);
  SRT_RETURN_IF_ERROR(ctx->execute());
  if (stats) {
    SRT_ASSIGN_OR_RETURN(*stats, ctx->last_run_stats());
  }
  std::vector<std::vector<uint8_t>> result;
  for (auto& [d, i] : outs) {
    std::vector<uint8_t> host(bufs[i].size());
    SRT_RETURN_IF_ERROR(bufs[i].copy_to_host(host.data(), host.size()));
    result.push_back(std::move(host));
  }
  return result;
}

// The budgets the issue names: 0, 25 %, 50 %, 100 % and auto.
inline std::vector<std::string> budget_points() { return {"0", "25%", "50%", "100%", "auto"}; }

inline uint64_t budget_bytes(const Engine& e, const std::string& v) {
  auto spec = parse_budget(v);
  EXPECT_TRUE(spec.ok());
  return resolve_budget(*spec, e.streamable_weights_size(), e.weight_streaming_automatic_budget());
}

// For every fixture: outputs at each budget are bitwise identical to the plain engine's.
inline void expect_bitwise_identical_at_budgets(DeviceType device) {
  auto rt = Runtime::create(RuntimeOptions{device});
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  for (const char* model : {"squeezenet1_1", "tiny_gpt", "mlp", "lenet_bn", "tiny_llama"}) {
    SCOPED_TRACE(model);
    auto inputs = fixture_inputs(model);
    auto plain_bytes = build_fixture(model, device, false, inputs);
    auto ws_bytes = build_fixture(model, device, true, inputs);
    ASSERT_TRUE(plain_bytes.ok() && ws_bytes.ok()) << plain_bytes.status().to_string() << ws_bytes.status().to_string();
    auto plain = (*rt)->load_engine_bytes(std::move(plain_bytes).value());
    auto ws = (*rt)->load_engine_bytes(std::move(ws_bytes).value());
    ASSERT_TRUE(plain.ok() && ws.ok());
    EXPECT_EQ((*plain)->streamable_weights_size(), 0u);
    ASSERT_GT((*ws)->streamable_weights_size(), 0u);
    auto expected = run_once(**plain, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    for (const std::string& b : budget_points()) {
      SCOPED_TRACE("budget " + b);
      uint64_t bytes = budget_bytes(**ws, b);
      ASSERT_TRUE((*ws)->set_weight_streaming_budget(bytes).ok());
      EXPECT_EQ((*ws)->weight_streaming_budget(), bytes);
      StreamingStats stats;
      auto got = run_once(**ws, inputs, &stats);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(*got, *expected);  // bitwise
      // At budget 0 every streamable weight is copied in, except tables the device reads in
      // place (embeddings only Gathers read: from pinned memory on CUDA, the plan on the CPU).
      const uint64_t in_place = find_device_backend(device)->residency((*ws)->state(), bytes).zero_copy_bytes;
      if (bytes == 0) { EXPECT_GE(stats.bytes_streamed + in_place, (*ws)->streamable_weights_size()); }
      if (bytes == (*ws)->streamable_weights_size()) { EXPECT_EQ(stats.bytes_streamed, 0u); }
    }
  }
}

}  // namespace streamrt::testing
