// Calibrated weight quantization (WeightQuant::calibration): GPTQ (Frantar et al., "GPTQ: Accurate
// Post-Training Quantization for Generative Pre-trained Transformers", 2022) over the statistics
// X^T X of a MatMul's input gathered on calibration data (builder/calibrate.h). It writes the same
// format as ops::quantize_weight() — codes, scales, zero points — so the kernels, the plan and
// streaming do not know which one chose the codes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/weight_quant.h"

namespace streamrt::builder {

// X^T X over every row of a MatMul input X seen in calibration (rows: all dims but the last),
// [k, k] row-major (symmetric).
struct InputStatistics {
  int64_t k = 0;
  std::vector<float> xtx;
};

// The upper Cholesky factor U of (H + λI)^-1 (U^T U = (H + λI)^-1), H = X^T X, λ 1 % of H's mean diagonal (raised tenfold
// while H + λI is not positive definite, at most four times), [k, k] row-major. Inputs never seen
// non-zero (a zero diagonal) count as seen with unit weight. kInvalidArgument when no damping helps.
Result<std::vector<float>> gptq_inverse_factor(const InputStatistics& s);

// Quantizes columns [0, f.n) of weight `w` ([K, N], or [N, K] when `trans`) to format `f`, each
// output channel's inputs in order, with `u` from gptq_inverse_factor() for the same K. Scales
// and zero points of a group come from the group's values when its first input is reached
// (already compensated for the error before it), as the paper does.
Result<ops::QuantizedWeight> quantize_weight_gptq(const Tensor& w, bool trans, const ops::WeightQuantFormat& f,
                                                  const std::vector<float>& u, const std::string& name);

}  // namespace streamrt::builder
