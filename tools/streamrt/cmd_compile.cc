// `streamrt compile model.onnx -o model.pte`: partition, build engines for the supported
// subgraphs, portable kernel calls for the rest, optional baked weight-streaming budget; with
// --cache / --cache-dir each engine goes through the engine cache, as `build` does.
#include <chrono>
#include <cstdio>

#include "commands.h"
#include "core/byte_size.h"
#include "core/file_io.h"
#include "delegate/compile.h"

namespace streamrt::cli {

Command add_compile_command(CLI::App& app) {
  struct State {
    std::string model, output, budget, budget_per_engine;
    std::vector<std::string> fallback_ops;
    BuildOptions opts;
    CacheOptions cache;
  };
  auto s = std::make_shared<State>();
  app.add_option("model", s->model, "ONNX model")->required();
  app.add_option("-o,--output", s->output, "program file to write (.pte)")->required();
  add_build_options(app, s->opts);
  app.add_option("--fallback-ops", s->fallback_ops, "op types to run as portable CPU kernels: Softmax,LayerNormalization")
      ->delimiter(',');
  auto* total = app.add_option("--weight-streaming-budget", s->budget,
                               "bake the program's total budget, split across its engines (8GiB, 50%, auto, bytes)");
  auto* each = app.add_option("--weight-streaming-budget-per-engine", s->budget_per_engine,
                              "bake each engine's own budget (8GiB, 50%, auto, bytes)");
  add_cache_options(app, s->cache);
  return [s, total, each]() {
    if (Status st = check_output_path(s->output); !st.ok()) return report_error(st);  // before the build
    auto config = make_builder_config(s->opts);
    if (!config.ok()) return report_error(config.status());
    delegate::CompileOptions o;
    o.builder = *config;
    o.fallback_ops.insert(s->fallback_ops.begin(), s->fallback_ops.end());
    if (total->count()) o.budget = s->budget;
    if (each->count()) o.budget_per_engine = s->budget_per_engine;
    std::unique_ptr<DiskEngineCache> cache;
    if (s->cache.enabled()) {
      auto opened = open_cache(s->cache);
      if (!opened.ok()) return report_error(opened.status());
      cache = std::move(opened).value();
      o.cache = cache.get();
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto compiled = delegate::compile_onnx(s->model, o);
    if (!compiled.ok()) return report_error(compiled.status());
    if (Status st = program::write_program(compiled->data, compiled->segments, s->output); !st.ok())
      return report_error(st);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("compiled %s -> %s in %.1f ms\n", s->model.c_str(), s->output.c_str(), ms);
    for (const auto& e : compiled->report.engines) {
      std::printf("  engine %s: %zu nodes, %zu steps, %s streamable\n", e.name.c_str(), e.nodes, e.steps,
                  format_bytes(e.streamable_size).c_str());
      if (e.cache) std::printf("    cache: %s\n", describe_cache_result(*e.cache, cache->dir()).c_str());
    }
    std::string kernels;
    for (const auto& k : compiled->report.kernel_calls) kernels += (kernels.empty() ? "" : ", ") + k;
    std::printf("  portable kernel calls: %s\n", kernels.empty() ? "none" : kernels.c_str());
    if (o.budget && !o.budget->empty()) std::printf("  baked weight_streaming_budget=%s\n", o.budget->c_str());
    if (o.budget_per_engine && !o.budget_per_engine->empty())
      std::printf("  baked weight_streaming_budget_per_engine=%s\n", o.budget_per_engine->c_str());
    return 0;
  };
}

}  // namespace streamrt::cli
