// com.microsoft MatMulNBits, onnxruntime's weight-only quantized MatMul (the format
// onnxruntime-genai, Olive and onnxruntime's matmul_nbits_quantizer write):
//   Y = A @ dequant(B)^T + bias, dequant(B)[n][k] = (code - zero_point) * scale per block of K.
// Inputs: A (T1: float32 / float16 / bfloat16, [..., K]); B (uint8 [N, n_blocks, blob], blob =
// block_size * bits / 8, codes two a byte, the first in the low nibble); scales (T1, N * n_blocks
// values: [N * n_blocks] or [N, n_blocks]); zero_points (optional: uint8 with two 4-bit values a
// byte, N * ceil(n_blocks / 2) of them, or T1 with N * n_blocks whole numbers in [0, 15];
// absent: 8); g_idx (optional int32 [K]: only the plain order k / block_size); bias (optional T1
// [N]). Attributes: K, N, bits (4 here), block_size (a power of two >= 16), accuracy_level
// (ignored: A stays in its float type, accumulation in float).
//
// B is WeightOnlyMatMul's 4-bit layout as it is (ops/weight_quant.h): the builder
// (builder/import_quantized.cc) turns every MatMulNBits into a WeightOnlyMatMul step reading B,
// the scales and the zero points as plan weights; the CPU kernel here converts per call.
#pragma once

#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/weight_quant.h"

namespace streamrt::ops {

inline constexpr const char* kMatMulNBits = "MatMulNBits";
inline constexpr const char* kMicrosoftDomain = "com.microsoft";

enum MatMulNBitsInput { kNBitsA = 0, kNBitsB = 1, kNBitsScales = 2, kNBitsZeros = 3, kNBitsGIdx = 4, kNBitsBias = 5 };

// The WeightOnlyMatMul format of a MatMulNBits node (bits 4, group = block_size, K, N), its
// attributes checked; kUnsupported for bits other than 4, kInvalidModel for bad values.
Result<WeightQuantFormat> matmul_nbits_format(const ir::Node& node);

// B, the scales and the zero points (null: absent) as WeightOnlyMatMul's packed / scales / zeros
// (packed and scales share B's and the scales' storage), after checking their types and sizes
// against `f` and that g_idx (null: absent) is the plain order. `float_type` is A's.
// kInvalidModel / kUnsupported naming the node.
Result<QuantizedWeight> matmul_nbits_weights(const ir::Node& node, const WeightQuantFormat& f, DataType float_type,
                                             const Tensor& b, const Tensor& scales, const Tensor* zeros,
                                             const Tensor* g_idx);

}  // namespace streamrt::ops
