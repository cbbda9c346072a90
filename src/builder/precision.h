// Reduced precision like TensorRT's --fp16 / --bf16: float32 layers run in float16 or bfloat16,
// while the model's inputs and outputs keep their types (casts at the edges). Kernels keep
// their accumulations (softmax sums, normalization statistics, reductions, GEMM) in float32.
#pragma once

#include "streamrt/builder.h"

#include "ir/graph.h"

namespace streamrt::builder {

// Converts every float32 constant, attribute and intermediate tensor of `g` to `target`
// (kFloat16 or kBFloat16). Graph inputs and outputs stay float32 through Cast nodes.
// Shapes must be re-inferred afterwards.
// Reports its progress through config.progress ("weights to fp16" / "weights to bf16").
Status convert_precision(ir::Graph& g, DataType target, const BuilderConfig& config);

}  // namespace streamrt::builder
