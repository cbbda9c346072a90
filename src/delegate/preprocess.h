// Preprocess (ExecuTorch's term): one partition of a graph -> a standalone subgraph -> an
// engine built by the same builder passes as a whole model -> its engine record.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "streamrt/builder.h"

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
};

// Builds `sub` for config.device (named config.engine_name) and wraps the plan in a record.
Result<PreprocessResult> preprocess(ir::Graph sub, const BuilderConfig& config);

}  // namespace streamrt::delegate
