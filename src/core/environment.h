// The environment variables that streamrt's programs (the CLI, bench tools, the test binaries)
// still honour, mapped onto configuration in one place. The library itself reads no environment:
// a program passes its lookup (std::getenv) and applies what comes back, flags on top. Every
// variable has a flag or field of its own; docs/design.md lists them.
//   STREAMRT_NO_CONV_FUSION, STREAMRT_NO_MATMUL_BIAS_FUSION, STREAMRT_NO_ROTARY_FUSION,
//   STREAMRT_NO_ATTENTION_FUSION, STREAMRT_NO_VIEW_ALIASING, STREAMRT_NO_STEP_TIMING  -> a
//       BuilderPasses switch off;  STREAMRT_CONV_TACTICS -> BuilderPasses::conv_tactics on
//   STREAMRT_PROFILE -> RuntimeOptions::profile;  STREAMRT_STEP_TIMES=FILE, STREAMRT_STREAM_TRACE=FILE
//       -> step_times_path, stream_trace_path;  STREAMRT_ATTENTION_KERNEL=auto|simple|mma|wgmma
//   STREAMRT_LOG=error|warning|info|verbose -> set_log_level;  STREAMRT_NO_SIMD -> set_cpu_simd(false)
// A switch counts as set when its value is neither empty nor "0".
#pragma once

#include <functional>
#include <optional>

#include "core/logging.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {

// std::getenv, or a table in tests: the value of a variable, null when unset.
using EnvLookup = std::function<const char*(const char* name)>;

// True when `name` is set to something other than "" or "0".
bool env_switch(const EnvLookup& env, const char* name);

// Applies the build switches that are set (a switch never turns a pass back on).
void passes_from_environment(BuilderPasses& passes, const EnvLookup& env);

// Applies the run-time diagnostics that are set; kInvalidArgument naming the variable for an
// unknown STREAMRT_ATTENTION_KERNEL.
Status runtime_options_from_environment(RuntimeOptions& options, const EnvLookup& env);

// STREAMRT_LOG's level, nullopt when unset or empty; kInvalidArgument naming the variable for
// an unknown level.
Result<std::optional<LogLevel>> log_level_from_environment(const EnvLookup& env);

// "error" | "warning" | "info" | "verbose"; kInvalidArgument otherwise.
Result<LogLevel> parse_log_level(const std::string& name);

}  // namespace streamrt
