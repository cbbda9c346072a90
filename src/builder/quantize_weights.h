// Weight-only quantization at build (BuilderConfig::weight_quant): MatMul / Gemm steps whose
// weight is a constant 2-D float tensor become WeightOnlyMatMul steps reading it compressed
// (ops/weight_quant.h). A weight that anything else reads (another op, a graph output, a Gemm
// that reads it the other way round) stays as it is, and so do its readers.
#pragma once

#include <unordered_map>

#include "builder/lowering.h"
#include "ir/graph.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

// Rewrites the steps and adds the compressed weights (named after the original: "W::q",
// "W::scales", "W::zeros"); the original constants are left for remove_dead_code(). Counts the
// steps rewritten (and calibrated) in `report`. With calibration inputs the graph first runs on
// the CPU over them (builder/calibrate.h, `profiles` as prepared) and the weights are quantized by
// GPTQ (builder/gptq.h). kInvalidArgument naming a weight that cannot be quantized (non-finite
// values) or a calibration sample that does not fit the model.
Status quantize_weights(ir::Graph& g, const BuilderConfig& config,
                        const std::unordered_map<ir::ValueId, InputProfile>& profiles, BuildReport& report);

}  // namespace streamrt::builder
