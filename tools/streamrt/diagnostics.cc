// Diagnostic flags of the CLI and the environment variables they replace. The library reads no
// environment: this file (with core/environment.h's table of names) is where the CLI does, so
// that scripts that set STREAMRT_NO_ATTENTION_FUSION=1 or STREAMRT_PROFILE=1 keep working. A flag
// adds to (switches) or wins over (values) its variable.
#include <cstdlib>

#include "commands.h"
#include "core/environment.h"
#include "ops/half_gemm.h"

namespace streamrt::cli {

void add_pass_options(CLI::App& app, PassOptions& o) {
  app.add_option("--no-fusion", o.no_fusion,
                 "diagnostics: leave these fusions out: conv, matmul-bias, matmul-residual, matmul-group, rotary, attention or all, comma-separated "
                 "(also STREAMRT_NO_<NAME>_FUSION=1)")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_flag("--no-view-aliasing", o.no_view_aliasing,
               "diagnostics: every view step (Reshape, Squeeze, ...) copies (also STREAMRT_NO_VIEW_ALIASING=1)");
  app.add_flag("--conv-tactics", o.conv_tactics,
               "CUDA: also time cuDNN's Conv algorithms at build time (off by default: slower end to end on an "
               "H200; also STREAMRT_CONV_TACTICS=1)");
  app.add_flag("--no-step-timing", o.no_step_timing,
               "CUDA --weight-streaming: skip timing each step for the residency planner, which then uses its "
               "estimates (also STREAMRT_NO_STEP_TIMING=1)");
}

Result<BuilderPasses> make_builder_passes(const PassOptions& o) {
  BuilderPasses p;
  passes_from_environment(p, std::getenv);
  const std::pair<const char*, bool BuilderPasses::*> fusions[] = {
      {"conv", &BuilderPasses::conv_fusion},
      {"matmul-bias", &BuilderPasses::matmul_bias_fusion},
      {"matmul-residual", &BuilderPasses::matmul_residual_fusion},
      {"matmul-group", &BuilderPasses::matmul_group_fusion},
      {"rotary", &BuilderPasses::rotary_fusion},
      {"attention", &BuilderPasses::attention_fusion},
  };
  for (const std::string& name : o.no_fusion) {
    bool known = false;
    for (const auto& [fusion, field] : fusions)
      if (name == fusion || name == "all") {
        p.*field = false;
        known = true;
      }
    if (!known)
      return invalid_argument("--no-fusion '" + name + "': expected conv, matmul-bias, matmul-residual, matmul-group, rotary, attention or all");
  }
  if (o.no_view_aliasing) p.view_aliasing = false;
  if (o.conv_tactics) p.conv_tactics = true;
  if (o.no_step_timing) p.step_timing = false;
  return p;
}

void add_diagnostic_options(CLI::App& app, DiagnosticOptions& o) {
  app.add_flag("--profile-ops", o.profile,
               "CUDA: print GPU time per op type and output dims when the run ends (also STREAMRT_PROFILE=1)");
  app.add_option("--step-times", o.step_times,
                 "CUDA: append each step's mean GPU time and the residency planner's estimate to this file as "
                 "JSON lines (also STREAMRT_STEP_TIMES=FILE)");
  app.add_option("--stream-trace", o.stream_trace,
                 "CUDA: append each run's streamed-weight timeline to this file as a JSON line (also "
                 "STREAMRT_STREAM_TRACE=FILE)");
  app.add_option("--attention-kernel", o.attention_kernel,
                 "CUDA: auto (tensor cores where they apply: warpgroup MMA for prefill on sm_90) | simple (the "
                 "warp-per-row kernel for every call) | mma (mma.sync also where warpgroup MMA would run) | wgmma "
                 "(warpgroup MMA for every prefill it can run, whatever its length); also "
                 "STREAMRT_ATTENTION_KERNEL");
  app.add_flag("--no-few-row-kernel", o.no_few_row_kernel,
               "CUDA: products of two to eight rows go to cuBLASLt instead of streamrt's tensor-core kernel");
  app.add_flag("--no-programmatic-launch", o.no_programmatic_launch,
               "CUDA (sm_90): the decode path's kernels each wait for the one before to end instead of starting "
               "while it ends (programmatic dependent launch, the default)");
  app.add_option("--group-gemm-kernel", o.group_gemm_kernel,
                 "CUDA: auto (the one-launch group GEMM where the build timed it faster) | cublaslt (a GEMM a "
                 "weight for every MatMulGroup) | group (the group GEMM wherever it runs, sm_90)");
}

Result<RuntimeOptions> make_runtime_options(const DiagnosticOptions& o, std::optional<DeviceType> device) {
  RuntimeOptions ro;
  SRT_RETURN_IF_ERROR(runtime_options_from_environment(ro, std::getenv));
  ro.device = device;
  if (o.profile) ro.profile = true;
  if (!o.step_times.empty()) ro.step_times_path = o.step_times;
  if (!o.stream_trace.empty()) ro.stream_trace_path = o.stream_trace;
  if (!o.attention_kernel.empty()) {
    auto k = parse_attention_kernel(o.attention_kernel);
    if (!k.ok()) return k.status().with_context("--attention-kernel");
    ro.attention_kernel = *k;
  }
  if (o.no_few_row_kernel) ro.few_row_kernel = false;
  if (o.no_programmatic_launch) ro.programmatic_launch = false;
  if (!o.group_gemm_kernel.empty()) {
    auto k = parse_group_gemm_kernel(o.group_gemm_kernel);
    if (!k.ok()) return k.status().with_context("--group-gemm-kernel");
    ro.group_gemm_kernel = *k;
  }
  return ro;
}

Status apply_process_options(const std::string& log_level) {
  SRT_ASSIGN_OR_RETURN(std::optional<LogLevel> from_env, log_level_from_environment(std::getenv));
  if (from_env) set_log_level(*from_env);
  if (!log_level.empty()) {
    auto level = parse_log_level(log_level);
    if (!level.ok()) return level.status().with_context("--log-level");
    set_log_level(*level);
  }
  if (env_switch(std::getenv, "STREAMRT_NO_SIMD")) ops::set_cpu_simd(false);
  return ok_status();
}

}  // namespace streamrt::cli
