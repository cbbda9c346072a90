// Weight-only quantization at build (BuilderConfig::weight_quant): MatMul / Gemm steps whose
// weight is a constant 2-D float tensor become WeightOnlyMatMul steps reading it compressed
// (ops/weight_quant.h). A weight that anything else reads (another op, a graph output, a Gemm
// that reads it the other way round) stays as it is, and so do its readers.
#pragma once

#include "ir/graph.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

// Rewrites the steps and adds the compressed weights (named after the original: "W::q",
// "W::scales", "W::zeros"); the original constants are left for remove_dead_code(). Returns the
// number of steps rewritten. kInvalidArgument naming a weight that cannot be quantized
// (non-finite values).
Result<size_t> quantize_weights(ir::Graph& g, const WeightQuant& q);

}  // namespace streamrt::builder
