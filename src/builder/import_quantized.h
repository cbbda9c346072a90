// Weights the model stores quantized, read as they are (issue 19): MatMul / Gemm steps whose
// weight is
//   - DequantizeLinear(x, scale[, zero_point]) of a constant int8 / uint8 x (ONNX INT4 / UINT4
//     initializers import as those, onnx/tensor_proto.cc), directly or through a 2-D Transpose,
//     per tensor, per output channel, or (opset 21) in blocks along K, or
//   - com.microsoft MatMulNBits (ops/matmul_nbits.h),
// become WeightOnlyMatMul steps (ops/weight_quant.h) reading the model's integer codes, re-packed
// into that op's layout where it differs, never dequantized: codes and zero points that fit 4 bits
// (blocked weights must) are stored as 4 bits (int4 code q as q + 8), the rest as 8 bits with
// per-channel int8 zero points (uint8 code q as q - 128). A DequantizeLinear that does not fit
// (blocks along N, a block size that is no power of two >= 16, a scale of another type than the
// activations) stays as it is and is folded into a float weight like any constant.
//
// Runs right after the first shape inference, before constant folding would dequantize the
// weights. The steps record `__prequantized` (the codes' name in the model): refit by that name is
// refused (refit/refit_core.cc), refit of the plan weights (`<codes>::q`, `::scales`, `::zeros`)
// or from the ONNX model works as for any weight.
#pragma once

#include "ir/graph.h"

namespace streamrt::builder {

// Rewrites the steps (the dequantization nodes they read are left for remove_dead_code) and
// returns their number. kUnsupported naming the node for a MatMulNBits step the op cannot run:
// B (or its scales, zero points, g_idx) not a constant, bits other than 4, g_idx reordering K,
// fractional zero points.
Result<size_t> import_quantized_weights(ir::Graph& g);

}  // namespace streamrt::builder
