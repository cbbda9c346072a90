// Weight-only quantized MatMul: the WeightOnlyMatMul step and its weight formats.
//
// The builder (builder/quantize_weights.cc, BuilderConfig::weight_quant) rewrites MatMul(A, W) /
// Gemm(A, W[, C]) with a constant 2-D weight into
//   WeightOnlyMatMul(A, packed, scales, [zeros], [bias])      Y = A @ dequant(packed)^T + bias
// streamrt's own op (the "__" attributes mark build records, never ONNX's). Its weights are
// ordinary plan weights, so they are stored, streamed and refitted compressed. The layout is
// output-channel major, [N, ...] (MatMulNBits' too), so a GEMV reads each channel contiguously
// and a split along N (weight streaming's chunks) slices every input along axis 0:
//   bits 8: packed int8 [N, K]; scales [N] (A's float type); w = q * scale, symmetric; or, with
//           zeros int8 [N] (pre-quantized models' zero points: a uint8 code q with zero point
//           z is stored as q - 128, z - 128), w = (q - zero) * scale.
//   bits 8, float8 = 1: packed uint8 [N, K] of float8 e4m3 codes (core/float8.h); scales [N];
//           w = e4m3(q) * scale, no zero points.
//   bits 4: packed uint8 [N, G * group / 2] with G = ceil(K / group) groups along K, element k of
//           a row in the low nibble of byte k / 2 when k is even, the high one when odd (the last
//           group padded); scales [N, G] (A's type); zeros uint8 [N, G] (0..15);
//           w = (q - zero) * scale. MatMulNBits' B is this layout as it is.
// Activations and accumulation stay in A's type (float32, float16, bfloat16; float accumulation).
// Attributes: bits (4 | 8), float8 (optional, 0 | 1: 8 bits only), group (4 bits: a power of two
// >= 16; --weight-quant writes 32, 64 or 128), K, N. Build records for refit: __source (the original weight's name), __source_dims (its
// dims), __trans (1: it was stored [N, K], Gemm's transB), __n_offset (the first of the
// original's columns this step computes); or, for a weight the model stored quantized
// (builder/import_quantized.cc), __prequantized (the name of its codes in the model) and
// __n_offset.
#pragma once

#include <string>

#include <algorithm>
#include <cmath>

#include "core/float8.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/common.h"

namespace streamrt::ops {

inline constexpr const char* kWeightOnlyMatMul = "WeightOnlyMatMul";

struct WeightQuantFormat {
  int bits = 8;
  int64_t group = 0;  // 4 bits only
  int64_t k = 0, n = 0;
  bool fp8 = false;  // 8 bits: float8 e4m3 codes instead of int8
  int64_t groups() const { return bits == 4 ? (k + group - 1) / group : 1; }
  // Bytes of one output channel's packed row.
  int64_t row_bytes() const { return bits == 4 ? groups() * group / 2 : k; }
  DataType packed_dtype() const { return bits == 4 || fp8 ? DataType::kUInt8 : DataType::kInt8; }
  Dims packed_dims() const { return {n, row_bytes()}; }
  Dims scale_dims() const { return bits == 4 ? Dims{n, groups()} : Dims{n}; }
  // Zero points: required for 4 bits, optional for int8, none for float8.
  DataType zero_dtype() const { return bits == 4 ? DataType::kUInt8 : DataType::kInt8; }
  Dims zero_dims() const { return bits == 4 ? Dims{n, groups()} : Dims{n}; }
};

// A 4-bit group: a power of two in [16, kMaxAttrExtent].
bool valid_weight_quant_group(int64_t group);

// bits / float8 / group / K / N of a WeightOnlyMatMul node, checked (bits 4 or 8, float8 with 8 bits
// only, a valid group for 4 bits, K and N in [1, kMaxAttrExtent]); kInvalidModel naming the node
// and attribute.
Result<WeightQuantFormat> read_weight_quant_format(const ir::Node& node);

// Sets a WeightOnlyMatMul node's bits / group / K / N attributes from `f`.
void set_weight_quant_attrs(ir::Node& node, const WeightQuantFormat& f);

struct QuantizedWeight {
  Tensor packed, scales, zeros;  // zeros: 4 bits, and 8 bits with zero points (else empty)
};

// The rounding rule of --weight-quant, shared by quantize_weight() (each weight to its nearest
// code) and GPTQ (builder/gptq.cc, codes chosen column by column): a step's scale as the plan
// stores it (type T, so dequantization reproduces what was measured), and a value's code.
struct QuantStep {
  float scale = 0, zero = 0;  // zero: 4 bits only
};
// 8 bits: symmetric over [-amax, amax], codes -127..127.
template <typename T>
QuantStep int8_step(float amax) {
  return {static_cast<float>(load(store<T>(amax / 127.f))), 0.f};
}
// 4 bits: asymmetric over [lo, hi] (lo <= 0 <= hi, so zero stays exact), codes 0..15.
template <typename T>
QuantStep int4_step(float lo, float hi) {
  float s = static_cast<float>(load(store<T>((hi - lo) / 15.f)));
  if (!(s > 0)) return {};
  return {s, std::clamp(std::nearbyint(-lo / s), 0.f, 15.f)};
}
// float8: per channel over [-amax, amax] onto e4m3's [-448, 448].
template <typename T>
QuantStep fp8_step(float amax) {
  return {static_cast<float>(load(store<T>(amax / kFloat8E4M3Max))), 0.f};
}
inline uint8_t fp8_code(float w, QuantStep s) { return s.scale > 0 ? float_to_e4m3(w / s.scale) : uint8_t{0}; }
inline float int8_code(float w, QuantStep s) {
  return s.scale > 0 ? std::clamp(std::nearbyint(w / s.scale), -127.f, 127.f) : 0.f;
}
inline float int4_code(float w, QuantStep s) {
  return s.scale > 0 ? std::clamp(std::nearbyint(w / s.scale) + s.zero, 0.f, 15.f) : s.zero;
}

// Quantizes columns [n0, n0 + fmt.n) of `w` (float32 / float16 / bfloat16, [K, N_total], or
// [N_total, K] with `trans`) into fmt's layout; scales have w's type and are rounded to it before
// the codes are chosen, so dequantization reproduces what was measured. kInvalidArgument naming
// `name` for a non-finite weight or a range outside w.
Result<QuantizedWeight> quantize_weight(const Tensor& w, bool trans, int64_t n0, const WeightQuantFormat& fmt,
                                        const std::string& name);

}  // namespace streamrt::ops
