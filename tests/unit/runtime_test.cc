// End-to-end: ONNX fixture -> plan -> runtime, checked against the fixture's reference data.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "onnx/tensor_proto.h"
#include "plan/plan.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {

const std::string kModels = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models";

Tensor load(const std::string& rel) {
  auto t = onnx_import::load_tensor_pb(kModels + "/" + rel);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

std::shared_ptr<Engine> build_mlp(Dims min = {1, 784}, Dims opt = {4, 784}, Dims max = {8, 784}) {
  BuilderConfig config;
  config.profiles["input"] = {min, opt, max};
  auto bytes = build_plan_from_onnx(kModels + "/mlp/model.onnx", config);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto rt = Runtime::create(cpu);
  EXPECT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(std::move(bytes).value());
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return *engine;
}

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

TEST(Runtime, IoIntrospectionAndMemorySize) {
  auto engine = build_mlp();
  auto io = engine->io_tensors();
  ASSERT_EQ(io.size(), 2u);
  EXPECT_EQ(io[0].name, "input");
  EXPECT_TRUE(io[0].is_input);
  EXPECT_EQ(io[0].dims, (Dims{-1, 784}));
  EXPECT_EQ(io[0].max, (Dims{8, 784}));
  EXPECT_EQ(io[1].name, "logits");
  EXPECT_EQ(io[1].max, (Dims{8, 10}));
  // Two hidden activations at batch 8 (8x256 and 8x128 floats at most) share or not, but the
  // arena is bounded by their sum and at least the largest.
  EXPECT_GE(engine->device_memory_size(), 8u * 256 * 4);
  EXPECT_LE(engine->device_memory_size(), 8u * (256 + 128 + 256 + 128) * 4);
  EXPECT_GT(engine->weights_size(), 784u * 256 * 4);
}

TEST(Runtime, MatchesReferenceAcrossProfileShapes) {
  auto engine = build_mlp();
  auto ctx = engine->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  for (int set : {0, 1}) {
    std::string dir = "mlp/test_data_set_" + std::to_string(set);
    Tensor in = load(dir + "/input_0.pb"), want = load(dir + "/output_0.pb");
    ASSERT_TRUE((*ctx)->set_input_shape("input", in.dims()).ok());
    ASSERT_TRUE((*ctx)->set_tensor_address("input", in.mutable_data(), in.nbytes()).ok());
    auto dims = (*ctx)->tensor_shape("logits");
    ASSERT_TRUE(dims.ok()) << dims.status().to_string();
    EXPECT_EQ(*dims, want.dims());
    std::vector<float> out(want.numel());
    ASSERT_TRUE((*ctx)->set_tensor_address("logits", out.data(), out.size() * 4).ok());
    Status st = (*ctx)->execute();
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_LT(max_abs_diff(out.data(), want.data_as<float>(), out.size()), 1e-4);
  }
}

TEST(Runtime, ShapeOutsideProfileIsRejectedWithBounds) {
  auto engine = build_mlp();
  auto ctx = engine->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  Status st = (*ctx)->set_input_shape("input", {9, 784});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'input'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("1x784 .. 8x784"), std::string::npos) << st.message();
  EXPECT_EQ((*ctx)->set_input_shape("input", {2, 783}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*ctx)->set_input_shape("input", {2}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*ctx)->set_input_shape("nope", {2, 784}).code(), StatusCode::kNotFound);
}

TEST(Runtime, ExecuteWithoutBindingsIsInvalidState) {
  auto engine = build_mlp();
  auto ctx = engine->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ((*ctx)->execute().code(), StatusCode::kInvalidState);  // no shape yet
  ASSERT_TRUE((*ctx)->set_input_shape("input", {2, 784}).ok());
  EXPECT_EQ((*ctx)->execute().code(), StatusCode::kInvalidState);  // no address yet
  std::vector<float> in(2 * 784), out(2);  // output buffer far too small
  ASSERT_TRUE((*ctx)->set_tensor_address("input", in.data(), in.size() * 4).ok());
  EXPECT_EQ((*ctx)->execute().code(), StatusCode::kInvalidState);  // output unbound
  ASSERT_TRUE((*ctx)->set_tensor_address("logits", out.data(), out.size() * 4).ok());
  EXPECT_EQ((*ctx)->execute().code(), StatusCode::kInvalidArgument);
}

TEST(Runtime, ContextsRunConcurrentlyOnOneEngine) {
  auto engine = build_mlp();
  Tensor in1 = load("mlp/test_data_set_1/input_0.pb"), want1 = load("mlp/test_data_set_1/output_0.pb");
  Tensor in0 = load("mlp/test_data_set_0/input_0.pb"), want0 = load("mlp/test_data_set_0/output_0.pb");
  constexpr int kThreads = 4, kIters = 25;
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = engine->create_execution_context();
      if (!ctx.ok()) { bad[t] = -1; return; }
      Tensor& in = t % 2 ? in1 : in0;
      Tensor& want = t % 2 ? want1 : want0;
      std::vector<float> out(want.numel());
      if (!(*ctx)->set_input_shape("input", in.dims()).ok() ||
          !(*ctx)->set_tensor_address("input", in.mutable_data(), in.nbytes()).ok() ||
          !(*ctx)->set_tensor_address("logits", out.data(), out.size() * 4).ok()) {
        bad[t] = -1;
        return;
      }
      for (int i = 0; i < kIters; ++i) {
        std::fill(out.begin(), out.end(), NAN);
        if (!(*ctx)->execute().ok() || max_abs_diff(out.data(), want.data_as<float>(), out.size()) > 1e-4)
          ++bad[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

TEST(Runtime, PlanFileRoundTripThroughDisk) {
  BuilderConfig config;
  config.shapes["input"] = {3, 784};
  std::string path = ::testing::TempDir() + "/mlp_static.plan";
  BuildReport rep;
  ASSERT_TRUE(build_plan_file(kModels + "/mlp/model.onnx", config, path, &rep).ok());
  EXPECT_GT(rep.steps, 0u);
  EXPECT_LE(rep.arena_bytes, rep.naive_arena_bytes);
  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto rt = Runtime::create(cpu);
  auto engine = (*rt)->load_engine(path);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto io = (*engine)->io_tensors();
  EXPECT_EQ(io[0].dims, (Dims{3, 784}));
  EXPECT_EQ(io[1].dims, (Dims{3, 10}));
}

TEST(Runtime, PlanForAnotherDeviceIsIncompatible) {
  BuilderConfig config;
  config.shapes["input"] = {1, 784};
  auto bytes = build_plan_from_onnx(kModels + "/mlp/model.onnx", config);
  ASSERT_TRUE(bytes.ok());
  auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes).value());
  auto loaded = plan::read_plan_bytes(holder->data(), holder->size(), holder);
  ASSERT_TRUE(loaded.ok());
  plan::PlanData data = loaded->data;
  data.device = {plan::DeviceKind::kCuda, 9, 0, "NVIDIA H100"};
  auto cuda_bytes = plan::serialize_plan(data);
  ASSERT_TRUE(cuda_bytes.ok()) << cuda_bytes.status().to_string();
  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto rt = Runtime::create(cpu);
  auto engine = (*rt)->load_engine_bytes(std::move(cuda_bytes).value());
  EXPECT_EQ(engine.status().code(), StatusCode::kIncompatible);
  EXPECT_NE(engine.status().message().find("built for cuda"), std::string::npos) << engine.status().message();
}

TEST(Builder, ErrorsNameTheInput) {
  BuilderConfig config;  // mlp has a dynamic batch: needs shapes or a profile
  auto r = build_plan_from_onnx(kModels + "/mlp/model.onnx", config);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'input'"), std::string::npos);
  config.shapes["bogus"] = {1};
  EXPECT_EQ(build_plan_from_onnx(kModels + "/mlp/model.onnx", config).status().code(), StatusCode::kInvalidArgument);
  BuilderConfig bad_profile;
  bad_profile.profiles["input"] = {{4, 784}, {2, 784}, {8, 784}};  // min > opt
  EXPECT_EQ(build_plan_from_onnx(kModels + "/mlp/model.onnx", bad_profile).status().code(),
            StatusCode::kInvalidArgument);
  BuilderConfig wrong_dim;
  wrong_dim.shapes["input"] = {1, 700};  // 784 is static in the model
  EXPECT_EQ(build_plan_from_onnx(kModels + "/mlp/model.onnx", wrong_dim).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace streamrt
