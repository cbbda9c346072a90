#include <chrono>
#include <cstdio>

#include "builder/shape_spec.h"
#include "core/byte_size.h"
#include "commands.h"
#include "core/file_io.h"
#include "progress_bar.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::cli {

void add_build_options(CLI::App& app, BuildOptions& o) {
  app.add_option("--shapes", o.shapes, "fixed input shapes: name:1x3x224x224[,name2:...]");
  app.add_option("--profile", o.profiles, "optimization profile of a dynamic input: name:MIN:OPT:MAX")
      ->take_all();
  app.add_option("--device", o.device, "target device: auto (CUDA when a GPU is present) | cpu | cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  auto* fp16 = app.add_flag("--fp16", o.fp16, "run float32 layers in float16 (I/O keep their types)");
  app.add_flag("--bf16", o.bf16, "run float32 layers in bfloat16 (I/O keep their types)")->excludes(fp16);
  app.add_flag("--weight-streaming", o.weight_streaming,
               "mark large weights streamable: the engine can run with part of its weights in device memory "
               "(needs a strongly typed network: not with --fp16/--bf16)");
  app.add_option("--stream-chunk", o.stream_chunk,
                 "with --weight-streaming: split weights larger than this into chunks streamed one step at a "
                 "time, so streaming scratch is a few chunks (bytes or binary units, e.g. 32MiB; 0 keeps weights "
                 "whole)")
      ->capture_default_str();
  app.add_option("--weight-quant", o.weight_quant,
                 "store MatMul / Gemm weights compressed, read by kernels that dequantize as they go: none | int8 "
                 "(per output channel) | fp8 (float8 e4m3 codes, a scale per output channel) | int4[:GROUP] (GROUP 32, "
                 "64 or 128 along K, default 128; scales and zero points). Streamed weights stream compressed; activations keep the build's precision")
      ->capture_default_str();
  app.add_option("--calibration-dir", o.calibration_dir,
                 "with --weight-quant: quantize by GPTQ over calibration inputs instead of rounding, so products "
                 "on such inputs stay closer to float. DIR holds INPUT_NAME.npy files (one sample) or sub-folders "
                 "of them (one sample each); each sample runs the model once on the CPU at build time");
  app.add_flag("--kv-cache-in-place", o.kv_cache_in_place,
               "KV-cache decoders: store each past / present pair with room for the profile's longest present and "
               "append the new positions in place (bind one buffer to both), instead of copying the cache into the "
               "present every step; the step timing of --weight-streaming builds runs at the profile's opt");
  app.add_flag("--no-tactics", o.no_tactics, "CUDA: skip timing GEMM algorithms at build time (faster builds)");
  app.add_flag("--tf32", o.tf32,
               "CUDA: float32 MatMul/Gemm/Conv may use TF32 tensor cores (faster; about 1e-3 relative error, "
               "so the fp32 conformance tolerance (rtol 1e-4) does not hold: compare at ~1e-2)");
  app.add_option("--max-nodes", o.max_nodes, "refuse models of more nodes than this (a guard against runaway graphs)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-tensor-elements", o.max_tensor_elements,
                 "refuse models with a tensor of more elements than this at the shapes built for")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--progress", o.progress,
                 "progress bar on stderr for long phases (weight conversion, tactics, step timing): auto (when "
                 "stderr is a terminal) | on | off")
      ->capture_default_str()->check(CLI::IsMember({"auto", "on", "off"}));
  add_pass_options(app, o.passes);
}

Result<DeviceType> resolve_device(const std::string& name) {
  if (name != "auto") return parse_device_type(name);
  auto rt = Runtime::create();  // picks CUDA when a GPU answers
  if (!rt.ok()) return rt.status();
  return (*rt)->device();
}

Result<BuilderConfig> make_builder_config(const BuildOptions& o) {
  BuilderConfig c;
  SRT_ASSIGN_OR_RETURN(c.device, resolve_device(o.device));
  if (o.fp16) c.float_precision = DataType::kFloat16;
  if (o.bf16) c.float_precision = DataType::kBFloat16;
  c.weight_streaming = o.weight_streaming;
  auto parsed = parse_budget(o.stream_chunk);  // the size grammar of budgets, without % and auto
  if (!parsed.ok()) return invalid_argument("--stream-chunk: " + parsed.status().message());
  const BudgetSpec& chunk = *parsed;
  if (chunk.kind != BudgetSpec::Kind::kBytes)
    return invalid_argument("--stream-chunk '" + o.stream_chunk + "': expected a size such as 64MiB or 0");
  c.stream_chunk_bytes = chunk.bytes;
  auto quant = parse_weight_quant(o.weight_quant);
  if (!quant.ok()) return quant.status().with_context("--weight-quant");
  c.weight_quant = *quant;
  if (!o.calibration_dir.empty()) {
    if (c.weight_quant.scheme == WeightQuantScheme::kNone)
      return invalid_argument("--calibration-dir needs --weight-quant int8, fp8 or int4[:GROUP]");
    SRT_ASSIGN_OR_RETURN(c.weight_quant.calibration, load_calibration_dir(o.calibration_dir));
  }
  c.kv_cache_in_place = o.kv_cache_in_place;
  c.tactics = !o.no_tactics;
  c.max_nodes = o.max_nodes;
  c.max_tensor_elements = o.max_tensor_elements;
  c.allow_tf32 = o.tf32;
  SRT_ASSIGN_OR_RETURN(c.passes, make_builder_passes(o.passes));
  c.progress = cli::make_progress_bar(o.progress);
  for (const auto& s : o.shapes) SRT_RETURN_IF_ERROR(parse_shape_specs(s, &c.shapes));
  for (const auto& p : o.profiles) SRT_RETURN_IF_ERROR(parse_profile_spec(p, &c.profiles));
  return c;
}

Command add_build_command(CLI::App& app) {
  struct State {
    std::string model, output;
    BuildOptions opts;
    CacheOptions cache;
    bool strip_weights = false;
  };
  auto s = std::make_shared<State>();
  app.add_option("model", s->model, "ONNX model")->required();
  app.add_option("-o,--output", s->output, "plan file to write")->required();
  add_build_options(app, s->opts);
  app.add_flag("--strip-weights", s->strip_weights, "write the plan without weights (refit it before running: streamrt refit)");
  add_cache_options(app, s->cache);
  return [s]() {
    // Before the build: a bad -o (a directory, FIFO, device, symlink) fails at once.
    if (Status st = check_output_path(s->output); !st.ok()) return report_error(st);
    auto config = make_builder_config(s->opts);
    if (!config.ok()) return report_error(config.status());
    config->strip_weights = s->strip_weights;
    BuildReport rep;
    auto t0 = std::chrono::steady_clock::now();
    Status st = s->cache.enabled() ? build_with_cache(s->model, *config, s->output, s->cache, &rep)
                                   : build_plan_file(s->model, *config, s->output, &rep);
    if (!st.ok()) return report_error(st);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("built %s -> %s in %.1f ms\n", s->model.c_str(), s->output.c_str(), ms);
    std::printf("  nodes: %zu imported, %zu folded, %zu removed, %zu fused away, %zu steps\n", rep.nodes_imported,
                rep.nodes_folded, rep.nodes_removed, rep.nodes_fused, rep.steps);
    std::printf("  weights: %.2f MiB; activations: %.2f MiB planned (%.2f MiB without sharing)\n",
                rep.weight_bytes / 1048576.0, rep.arena_bytes / 1048576.0, rep.naive_arena_bytes / 1048576.0);
    if (config->device == DeviceType::kCuda)
      std::printf("  tactics: %zu steps tuned (%zu with the timings of an identical step) in %.1f ms%s%s\n",
                  rep.steps_tuned, rep.steps_tuned_reused, rep.tactic_ms, config->tactics ? "" : " (--no-tactics)",
                  config->allow_tf32 ? "; tf32 allowed" : "");
    if (config->weight_quant.scheme != WeightQuantScheme::kNone)
      std::printf("  weight quantization %s: %zu MatMul / Gemm steps read compressed weights\n",
                  weight_quant_name(config->weight_quant).c_str(), rep.steps_quantized);
    if (!config->weight_quant.calibration.empty())
      std::printf("  calibration: %zu samples; %zu steps quantized by GPTQ in %.1f ms\n",
                  config->weight_quant.calibration.size(), rep.steps_calibrated, rep.calibration_ms);
    if (rep.steps_prequantized > 0)
      std::printf("  pre-quantized weights: %zu steps read the model's DequantizeLinear / MatMulNBits codes "
                  "compressed\n", rep.steps_prequantized);
    if (config->kv_cache_in_place)
      std::printf("  KV cache in place: %zu past / present pairs, capacity %lld positions\n", rep.kv_pairs_in_place,
                  static_cast<long long>(rep.kv_capacity));
    if (s->strip_weights) std::printf("  weights stripped: refit the plan before running it (streamrt refit)\n");
    if (s->opts.weight_streaming)
      std::printf("  weight streaming: %zu weights streamable, %.2f MiB; %zu steps split into chunks of %s\n",
                  rep.streamable_weights, rep.streamable_bytes / 1048576.0, rep.steps_split,
                  format_bytes(config->stream_chunk_bytes).c_str());
    if (rep.steps_timed) {
      std::printf("  step times (for the residency planner): %.2f ms at the max shapes, measured in %.0f ms\n",
                  rep.step_ms_total, rep.step_timing_ms);
      if (rep.min_run_ms > 0)
        std::printf("  one run at the %s shapes: %.3f ms (%s)\n", rep.kv_pairs_in_place ? "opt" : "min", rep.min_run_ms,
                    rep.min_run_graph ? "CUDA graph replay" : "eager");
    } else if (s->opts.weight_streaming && config->device == DeviceType::kCuda && !rep.step_timing_note.empty()) {
      std::printf("  step times: %s\n", rep.step_timing_note.c_str());
    }
    return 0;
  };
}

}  // namespace streamrt::cli
