// RuntimeOptions' diagnostics reach the engines a runtime loads, the attention kernel names parse,
// and core/environment.h maps the old variables onto the configuration (a fake lookup here: the
// library reads no environment).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/environment.h"
#include "runtime/engine_state.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {

const std::string kModels = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models";

TEST(RuntimeOptions, AttentionKernelNamesRoundTripAndOthersAreRefused) {
  for (AttentionKernel k :
       {AttentionKernel::kAuto, AttentionKernel::kSimple, AttentionKernel::kMma, AttentionKernel::kWgmma})
    EXPECT_EQ(parse_attention_kernel(attention_kernel_name(k)).value(), k);
  EXPECT_STREQ(attention_kernel_name(AttentionKernel::kSimple), "simple");
  EXPECT_STREQ(attention_kernel_name(AttentionKernel::kMma), "mma");
  EXPECT_STREQ(attention_kernel_name(AttentionKernel::kWgmma), "wgmma");
  auto bad = parse_attention_kernel("flash");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'flash'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("auto, simple, mma or wgmma"), std::string::npos) << bad.status().message();
}

TEST(RuntimeOptions, GroupGemmKernelNamesRoundTripAndOthersAreRefused) {
  for (GroupGemmKernel k : {GroupGemmKernel::kAuto, GroupGemmKernel::kCublasLt, GroupGemmKernel::kGroup})
    EXPECT_EQ(parse_group_gemm_kernel(group_gemm_kernel_name(k)).value(), k);
  EXPECT_STREQ(group_gemm_kernel_name(GroupGemmKernel::kCublasLt), "cublaslt");
  EXPECT_STREQ(group_gemm_kernel_name(GroupGemmKernel::kGroup), "group");
  auto bad = parse_group_gemm_kernel("cutlass");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'cutlass'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("auto, cublaslt or group"), std::string::npos) << bad.status().message();
}

// Every engine of the runtime carries its options (the CUDA contexts read them from there); the
// CPU runs with them, ignoring the CUDA-only diagnostics.
TEST(RuntimeOptions, EnginesCarryTheirRuntimesOptions) {
  RuntimeOptions ro;
  ro.device = DeviceType::kCpu;
  ro.profile = true;
  ro.step_times_path = "/nonexistent/steps.jsonl";
  ro.stream_trace_path = "/nonexistent/trace.jsonl";
  ro.attention_kernel = AttentionKernel::kSimple;
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  EXPECT_TRUE((*rt)->options().profile);
  BuilderConfig c;
  c.shapes["input"] = {1, 784};
  auto bytes = build_plan_from_onnx(kModels + "/mlp/model.onnx", c);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto engine = (*rt)->load_engine_bytes(*bytes);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const RuntimeOptions& got = (*engine)->state().options;
  EXPECT_TRUE(got.profile);
  EXPECT_EQ(got.step_times_path, ro.step_times_path);
  EXPECT_EQ(got.stream_trace_path, ro.stream_trace_path);
  EXPECT_EQ(got.attention_kernel, AttentionKernel::kSimple);
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
  std::vector<float> x(784, 0.5f), y(10);
  ASSERT_TRUE((*ctx)->set_tensor_address("input", x.data(), x.size() * 4).ok());
  for (const TensorDesc& d : (*engine)->io_tensors())
    if (!d.is_input) ASSERT_TRUE((*ctx)->set_tensor_address(d.name, y.data(), y.size() * 4).ok());
  EXPECT_TRUE((*ctx)->execute().ok());
  // A default runtime's engines have the defaults.
  auto plain = Runtime::create({DeviceType::kCpu}).value()->load_engine_bytes(*bytes);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->state().options.profile);
  EXPECT_EQ((*plain)->state().options.attention_kernel, AttentionKernel::kAuto);
}

// A fake environment.
struct Env {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(Environment, BuildSwitchesMapOntoBuilderPasses) {
  BuilderPasses p;
  passes_from_environment(p, Env{}.lookup());
  EXPECT_EQ(p, BuilderPasses{});  // nothing set: the defaults
  const std::pair<const char*, bool BuilderPasses::*> off[] = {
      {"STREAMRT_NO_CONV_FUSION", &BuilderPasses::conv_fusion},
      {"STREAMRT_NO_MATMUL_BIAS_FUSION", &BuilderPasses::matmul_bias_fusion},
      {"STREAMRT_NO_MATMUL_RESIDUAL_FUSION", &BuilderPasses::matmul_residual_fusion},
      {"STREAMRT_NO_MATMUL_GROUP_FUSION", &BuilderPasses::matmul_group_fusion},
      {"STREAMRT_NO_ROTARY_FUSION", &BuilderPasses::rotary_fusion},
      {"STREAMRT_NO_ATTENTION_FUSION", &BuilderPasses::attention_fusion},
      {"STREAMRT_NO_VIEW_ALIASING", &BuilderPasses::view_aliasing},
      {"STREAMRT_NO_STEP_TIMING", &BuilderPasses::step_timing},
  };
  for (const auto& [name, field] : off) {
    for (const char* value : {"1", "yes"}) {
      BuilderPasses q;
      passes_from_environment(q, Env{{{name, value}}}.lookup());
      BuilderPasses want;
      want.*field = false;
      EXPECT_EQ(q, want) << name << "=" << value;
    }
    for (const char* value : {"0", ""}) {  // "set" means neither empty nor 0
      BuilderPasses q;
      passes_from_environment(q, Env{{{name, value}}}.lookup());
      EXPECT_EQ(q, BuilderPasses{}) << name << "=" << value;
    }
  }
  BuilderPasses t;
  passes_from_environment(t, Env{{{"STREAMRT_CONV_TACTICS", "1"}}}.lookup());
  EXPECT_TRUE(t.conv_tactics);
  // A variable never turns a pass back on that the caller switched off.
  BuilderPasses q;
  q.attention_fusion = false;
  passes_from_environment(q, Env{{{"STREAMRT_NO_ATTENTION_FUSION", "0"}}}.lookup());
  EXPECT_FALSE(q.attention_fusion);
}

TEST(Environment, RunTimeDiagnosticsMapOntoRuntimeOptions) {
  RuntimeOptions ro;
  ASSERT_TRUE(runtime_options_from_environment(ro, Env{}.lookup()).ok());
  EXPECT_FALSE(ro.profile);
  EXPECT_TRUE(ro.step_times_path.empty() && ro.stream_trace_path.empty());
  EXPECT_EQ(ro.attention_kernel, AttentionKernel::kAuto);
  const Env env{{{"STREAMRT_PROFILE", "1"},
                 {"STREAMRT_STEP_TIMES", "/tmp/steps.jsonl"},
                 {"STREAMRT_STREAM_TRACE", "/tmp/trace.jsonl"},
                 {"STREAMRT_ATTENTION_KERNEL", "simple"}}};
  ASSERT_TRUE(runtime_options_from_environment(ro, env.lookup()).ok());
  EXPECT_TRUE(ro.profile);
  EXPECT_EQ(ro.step_times_path, "/tmp/steps.jsonl");
  EXPECT_EQ(ro.stream_trace_path, "/tmp/trace.jsonl");
  EXPECT_EQ(ro.attention_kernel, AttentionKernel::kSimple);
  RuntimeOptions bad;
  Status st = runtime_options_from_environment(bad, Env{{{"STREAMRT_ATTENTION_KERNEL", "fast"}}}.lookup());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.to_string().find("STREAMRT_ATTENTION_KERNEL"), std::string::npos) << st.to_string();
}

TEST(Environment, LogLevelFromTheEnvironment) {
  EXPECT_FALSE(log_level_from_environment(Env{}.lookup()).value().has_value());
  EXPECT_FALSE(log_level_from_environment(Env{{{"STREAMRT_LOG", ""}}}.lookup()).value().has_value());
  EXPECT_EQ(log_level_from_environment(Env{{{"STREAMRT_LOG", "verbose"}}}.lookup()).value(), LogLevel::kVerbose);
  EXPECT_EQ(log_level_from_environment(Env{{{"STREAMRT_LOG", "error"}}}.lookup()).value(), LogLevel::kError);
  auto bad = log_level_from_environment(Env{{{"STREAMRT_LOG", "debug"}}}.lookup());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("STREAMRT_LOG"), std::string::npos) << bad.status().to_string();
  EXPECT_NE(bad.status().to_string().find("'debug'"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace streamrt
