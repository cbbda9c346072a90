// Subcommands of the streamrt CLI. Each registers its options on `app` and returns the
// callback state; main() runs whichever was chosen. Errors go to stderr, exit code non-zero.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <functional>
#include <memory>
#include <string>

#include "streamrt/builder.h"
#include "streamrt/cache.h"
#include "streamrt/runtime.h"
#include "streamrt/status.h"

namespace streamrt::cli {

using Command = std::function<int()>;

Command add_build_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_onnx_test_command(CLI::App& app);
Command add_ops_command(CLI::App& app);
Command add_compile_command(CLI::App& app);

// `run` and `inspect` of a program (.pte), dispatched from the plan commands.
struct RunProgramArgs {
  std::string path;
  std::vector<std::string> inputs;           // name=file.npy|file.pb
  std::vector<std::string> backend_options;  // Backend:key=value
  std::string output_dir;
  int iterations = 10, warmup = 2;
};
int run_program_command(const RunProgramArgs& args);
int inspect_program_command(const std::string& path, bool json);
// True when `path` names a program file (ends in .pte).
bool is_program_path(const std::string& path);
Command add_refit_command(CLI::App& app);
Command add_cache_command(CLI::App& app);

// The builder's diagnostic switches (BuilderPasses) as flags of `build`, `run model.onnx`,
// `compile` and `onnx-test` (diagnostics.cc). The STREAMRT_NO_*_FUSION, STREAMRT_NO_VIEW_ALIASING,
// STREAMRT_CONV_TACTICS and STREAMRT_NO_STEP_TIMING variables still apply (core/environment.h);
// a flag adds to them.
struct PassOptions {
  std::vector<std::string> no_fusion;  // conv | matmul-bias | matmul-residual | matmul-group | rotary | attention | all
  bool no_view_aliasing = false, conv_tactics = false, no_step_timing = false;
};
void add_pass_options(CLI::App& app, PassOptions& o);
// kInvalidArgument naming the flag for an unknown fusion.
Result<BuilderPasses> make_builder_passes(const PassOptions& o);

// The run-time diagnostics (RuntimeOptions, CUDA only) as flags of `run` and `onnx-test`, over
// STREAMRT_PROFILE, STREAMRT_STEP_TIMES, STREAMRT_STREAM_TRACE and STREAMRT_ATTENTION_KERNEL (a
// flag given wins over its variable).
struct DiagnosticOptions {
  bool profile = false;
  std::string step_times, stream_trace, attention_kernel, group_gemm_kernel;
  bool no_few_row_kernel = false;
  bool no_programmatic_launch = false;
};
void add_diagnostic_options(CLI::App& app, DiagnosticOptions& o);
// RuntimeOptions for `device` with the diagnostics; kInvalidArgument naming the flag or variable
// for an unknown attention kernel.
Result<RuntimeOptions> make_runtime_options(const DiagnosticOptions& o, std::optional<DeviceType> device);

// Process-wide settings, before any command runs: the log level (--log-level, else STREAMRT_LOG)
// and STREAMRT_NO_SIMD (the CPU's portable half-type GEMM loops). kInvalidArgument naming the flag
// or variable for an unknown level.
Status apply_process_options(const std::string& log_level);

// Options shared by `build`, `run model.onnx` and `compile`.
struct BuildOptions {
  std::vector<std::string> shapes, profiles;
  std::string device = "auto";
  bool fp16 = false, bf16 = false;
  bool weight_streaming = false;
  std::string stream_chunk = "64MiB";
  std::string weight_quant = "none";
  std::string calibration_dir;  // with weight_quant: GPTQ over these samples (calibration_dir.cc)
  bool kv_cache_in_place = false;
  bool no_tactics = false, tf32 = false;
  uint64_t max_nodes = BuilderConfig{}.max_nodes;
  int64_t max_tensor_elements = BuilderConfig{}.max_tensor_elements;
  PassOptions passes;
  std::string progress = "auto";  // progress bar of long phases: auto (on a terminal) | on | off
};
// "auto" -> CUDA when a GPU answers, else the CPU; "cpu" | "cuda" as named.
Result<DeviceType> resolve_device(const std::string& name);
void add_build_options(CLI::App& app, BuildOptions& o);
Result<BuilderConfig> make_builder_config(const BuildOptions& o);
// --calibration-dir: a folder of INPUT.npy files (one sample) or of such folders (one sample
// each, in name order).
Result<std::vector<std::map<std::string, Tensor>>> load_calibration_dir(const std::string& dir);

// Engine cache options of `build` and `compile` (cmd_cache.cc): --cache, --cache-dir,
// --cache-max-size. Any of them turns the cache on; without --cache-dir it is the default directory.
struct CacheOptions {
  bool use_default = false;
  std::string dir, max_size;
  bool enabled() const { return use_default || !dir.empty() || !max_size.empty(); }
};
void add_cache_options(CLI::App& app, CacheOptions& o);
// The DiskEngineCache `o` names (kInvalidArgument for a bad --cache-max-size).
Result<std::unique_ptr<DiskEngineCache>> open_cache(const CacheOptions& o);
// "hit <key> in <dir> (weights refitted from the model)" or "miss <key> (<reason>); stored in <dir>".
std::string describe_cache_result(const CachedBuildInfo& info, const std::string& dir);
// Builds through the cache and prints whether it hit or missed (and why).
Status build_with_cache(const std::string& model, const BuilderConfig& config, const std::string& output,
                        const CacheOptions& o, BuildReport* report);
// inspect --budget: resident / streamed split of a weight-streaming plan at a budget value.
Result<nlohmann::json> streaming_split(const std::string& plan_path, const std::string& budget_text);
void print_streaming_split(const nlohmann::json& split);

// Prints "error: <status>" to stderr and returns the exit code for it.
int report_error(const Status& st);

}  // namespace streamrt::cli
