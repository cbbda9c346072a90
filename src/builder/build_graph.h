// Building from an ir::Graph instead of an ONNX file: the delegate compiler's subgraphs go
// through the same passes as whole models (src/builder/builder.cc).
#pragma once

#include <unordered_map>
#include <vector>

#include "builder/lowering.h"
#include "ir/graph.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

// Applies config.shapes / config.profiles to g's inputs (an input with dynamic dims needs one
// of them) and returns each input's profile. Errors name the input.
Result<std::unordered_map<ir::ValueId, InputProfile>> apply_input_shapes(ir::Graph& g, const BuilderConfig& config);

// build_plan_from_onnx for an imported graph (topologically sorted; shapes need not be
// inferred yet). The engine is named config.engine_name, else g.name.
Result<std::vector<uint8_t>> build_plan_from_graph(ir::Graph g, const BuilderConfig& config,
                                                   BuildReport* report = nullptr);

}  // namespace streamrt::builder
