// Preprocess (ExecuTorch's term): one partition of a graph -> a standalone subgraph -> an
// engine built by the same builder passes as a whole model -> its engine record.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "streamrt/builder.h"
#include "streamrt/cache.h"

namespace streamrt::delegate {

struct Subgraph {
  ir::Graph graph;                  // inputs, outputs, constants (shared tensors) of its own
  std::vector<ir::ValueId> inputs;  // the source graph's values it reads (non-constant), in order
  std::vector<ir::ValueId> outputs;  // the source graph's values it produces for the rest
};

// The nodes `nodes` (indices into g.nodes, in order) as a graph named `name`. Its outputs are
// the values they produce that a node outside them reads, or that are outputs of g.
Subgraph extract_subgraph(const ir::Graph& g, std::span<const size_t> nodes, const std::string& name);

struct PreprocessResult {
  std::vector<uint8_t> record;  // the engine record (src/delegate/engine_record.h)
  uint64_t streamable_size = 0;
  BuildReport report;
  std::optional<CachedBuildInfo> cache;  // hit or miss, when built through an engine cache
};

// Where preprocess looks for (and stores) the partition's plan. `model_id` identifies the
// subgraph across compiles ("/abs/model.onnx#model_engine0"): the cache's miss explanations
// compare against the last key recorded under it.
struct PreprocessCache {
  EngineCache& cache;
  std::string model_id;
};

// Builds `sub` for config.device (named config.engine_name) and wraps the plan in a record.
// With `cache`, the plan comes from the cache (refitted with the subgraph's weights) or is
// built and stored there (cache::build_plan_data_cached); the record is the same either way.
Result<PreprocessResult> preprocess(ir::Graph sub, const BuilderConfig& config,
                                    const PreprocessCache* cache = nullptr);

}  // namespace streamrt::delegate
