#include "core/environment.h"

#include <string_view>

namespace streamrt {

bool env_switch(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v && *v && std::string_view(v) != "0";
}

void passes_from_environment(BuilderPasses& passes, const EnvLookup& env) {
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
  for (const auto& [name, field] : off)
    if (env_switch(env, name)) passes.*field = false;
  if (env_switch(env, "STREAMRT_CONV_TACTICS")) passes.conv_tactics = true;
}

Status runtime_options_from_environment(RuntimeOptions& options, const EnvLookup& env) {
  if (env_switch(env, "STREAMRT_PROFILE")) options.profile = true;
  if (const char* v = env("STREAMRT_STEP_TIMES"); v && *v) options.step_times_path = v;
  if (const char* v = env("STREAMRT_STREAM_TRACE"); v && *v) options.stream_trace_path = v;
  if (const char* v = env("STREAMRT_ATTENTION_KERNEL"); v && *v) {
    auto k = parse_attention_kernel(v);
    if (!k.ok()) return k.status().with_context("STREAMRT_ATTENTION_KERNEL");
    options.attention_kernel = *k;
  }
  return ok_status();
}

Result<LogLevel> parse_log_level(const std::string& name) {
  static const char* const names[] = {"error", "warning", "info", "verbose"};
  for (int i = 0; i < 4; ++i)
    if (name == names[i]) return static_cast<LogLevel>(i);
  return invalid_argument("unknown log level '" + name + "' (expected error, warning, info or verbose)");
}

Result<std::optional<LogLevel>> log_level_from_environment(const EnvLookup& env) {
  const char* v = env("STREAMRT_LOG");
  if (!v || !*v) return std::optional<LogLevel>();
  auto level = parse_log_level(v);
  if (!level.ok()) return level.status().with_context("STREAMRT_LOG");
  return std::optional<LogLevel>(*level);
}

}  // namespace streamrt
