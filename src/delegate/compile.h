// Ahead of time: an ONNX model -> a program (.pte) whose supported subgraphs are StreamRT
// engines and whose other nodes are portable kernel calls (`streamrt compile`).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "program/program_format.h"
#include "streamrt/builder.h"
#include "streamrt/cache.h"

namespace streamrt::delegate {

struct CompileOptions {
  // Target device, fixed input shapes (inputs must end up static), weight streaming. Profiles
  // are not supported yet: values crossing a graph break need static dims.
  BuilderConfig builder;
  std::set<std::string> fallback_ops;  // op types forced to portable kernel calls
  // Baked as compile specs, validated here (kInvalidArgument naming key and value); at most one.
  std::optional<std::string> budget, budget_per_engine;
  std::function<bool(const ir::Node&)> supported;  // overrides the device's op support (tests)
  // Engine cache (not owned; null = build every engine). Each partition's plan is served from
  // it (the cached weight-stripped plan, refitted with the model's current weights) or built
  // and stored. The programs are the same with and without it.
  EngineCache* cache = nullptr;
  // Identifies the model across compiles for the cache's miss explanations; engine i is
  // recorded as "<cache_model_id>#<engine name>". compile_onnx uses the model's absolute path
  // when empty, compile_graph the graph's name.
  std::string cache_model_id;
};

struct CompileReport {
  struct Engine {
    std::string name;
    size_t nodes = 0;
    size_t steps = 0;
    uint64_t streamable_size = 0;
    std::optional<CachedBuildInfo> cache;  // hit, or miss and why; only with CompileOptions::cache
  };
  std::vector<Engine> engines;
  std::vector<std::string> kernel_calls;  // op types, in program order
};

struct CompiledProgram {
  program::ProgramData data;
  std::vector<std::vector<uint8_t>> segments;
  CompileReport report;
};

Result<CompiledProgram> compile_graph(ir::Graph g, const CompileOptions& options);
Result<CompiledProgram> compile_onnx(const std::string& onnx_path, const CompileOptions& options);

}  // namespace streamrt::delegate
