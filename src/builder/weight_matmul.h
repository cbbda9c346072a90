// MatMul / Gemm steps that read input 1 as a weight, for the passes that store such weights
// compressed (builder/quantize_weights.cc: float weights quantized at build;
// builder/import_quantized.cc: weights the model stores quantized), and the WeightOnlyMatMul
// step both write (ops/weight_quant.h).
#pragma once

#include <optional>

#include "ir/graph.h"
#include "ops/weight_quant.h"

namespace streamrt::builder {

// A step Y = A @ W (+ bias) whose W (input 1) is a 2-D value of known dims: [K, N], or [N, K]
// when `trans` (Gemm's transB). MatMul (with or without the fused bias), and Gemm with transA 0,
// alpha 1 and C absent or a [N] / [1, N] row with beta 1. A is not a constant.
struct WeightMatMul {
  size_t node;
  ir::ValueId weight, bias = ir::kNoValue;
  bool trans = false;
  int64_t k = 0, n = 0;
};
std::optional<WeightMatMul> weight_matmul(const ir::Graph& g, size_t node);

// The compressed weights a WeightOnlyMatMul step reads (zeros: kNoValue for 8-bit without).
struct WeightOnlyInputs {
  ir::ValueId packed, scales, zeros = ir::kNoValue;
  ops::WeightQuantFormat fmt;
};

// Turns node `m.node` into WeightOnlyMatMul(A, packed, scales, [zeros], [bias]) with fmt's
// attributes and __n_offset 0; the caller adds its build records (__source ... or
// __prequantized).
void make_weight_only_matmul(ir::Graph& g, const WeightMatMul& m, const WeightOnlyInputs& w);

// Adds constant `t` as a new value named `name`.
ir::ValueId add_constant(ir::Graph& g, const std::string& name, Tensor t);

}  // namespace streamrt::builder
