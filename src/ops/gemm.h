// Gemm's attributes, read once for every device's kernel.
#pragma once

#include "ir/graph.h"

namespace streamrt::ops {

struct GemmAttrs {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.f;
  float beta = 1.f;
};

// transA, transB, alpha, beta with the ONNX defaults; a wrongly typed attribute is an error.
Result<GemmAttrs> read_gemm_attrs(const ir::Node& node);

}  // namespace streamrt::ops
