// Conv's fused epilogue: what the builder's conv fusion (src/builder/fuse_conv.cc) absorbs into
// a Conv node, read the same way by every device's kernel.
//
// Step attributes (the "__" prefix marks them as streamrt's, never ONNX's):
//   "__residual"   kInt 1: input 3 is R, a tensor of Y's dtype and dims, added after the bias
//                  (input 2, the bias, may then be omitted: kNoValue).
//   "__activation" kString "Relu": applied last.
// So Y = act(conv(X, W) + B + R), computed in float before the one rounding to Y's type.
#pragma once

#include "ir/graph.h"

namespace streamrt::ops {

inline constexpr const char* kConvResidualAttr = "__residual";
inline constexpr const char* kConvActivationAttr = "__activation";
inline constexpr size_t kConvResidualInput = 3;

struct ConvEpilogue {
  bool residual = false;
  bool relu = false;
};

// The node's epilogue. `has_residual` says whether input 3 is present. kInvalidModel for a
// wrongly typed attribute, __residual without input 3 (or input 3 without __residual) and
// more than 4 inputs; kUnsupported for an activation other than "Relu".
Result<ConvEpilogue> read_conv_epilogue(const ir::Node& node, size_t num_inputs, bool has_residual);

}  // namespace streamrt::ops
