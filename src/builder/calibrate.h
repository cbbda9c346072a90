// Calibration statistics for GPTQ (builder/gptq.h): the graph as prepared so far runs on the CPU
// over WeightQuant::calibration, with the inputs of the MatMuls to quantize as extra outputs, and
// each such input X adds X^T X to its statistics.
#pragma once

#include <map>
#include <unordered_map>
#include <vector>

#include "builder/gptq.h"
#include "builder/lowering.h"
#include "ir/graph.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

// Statistics of each value in `values` (float tensors whose last dim is the K given), from one run
// of the calibration samples. kInvalidArgument naming the sample and the input when a calibration
// sample does not fit the engine (a missing or unknown name, another element type, dims outside the
// profile).
Result<std::map<ir::ValueId, InputStatistics>> collect_input_statistics(
    const ir::Graph& g, const std::map<ir::ValueId, int64_t>& values,
    const std::unordered_map<ir::ValueId, InputProfile>& profiles, const BuilderConfig& config);

// `values` in groups whose statistics (K x K floats each) stay under a cap (2 GiB; a value larger
// than the cap is a group alone): a large model's inputs are calibrated a group at a time, each
// group's weights quantized before the next group's statistics are gathered.
std::vector<std::map<ir::ValueId, int64_t>> statistics_groups(const std::map<ir::ValueId, int64_t>& values);

}  // namespace streamrt::builder
