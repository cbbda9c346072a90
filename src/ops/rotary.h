// Rotary (rotary position embedding, rotate-half form): see rotary.cc. Shared with the CUDA kernel.
#pragma once

#include "ops/op.h"

namespace streamrt::ops {

// Rotations in a Rotary step of these input / output counts (1, or 2 for a paired step: X, cos,
// sin, X2, cos2, sin2 -> Y, Y2); 0 when the counts fit neither.
size_t rotary_parts(size_t inputs, size_t outputs);
// kInvalidArgument unless cos and sin broadcast to X's shape without enlarging it.
Status rotary_check_broadcast(const ir::Node& node, const Dims& x, const Dims& c, const Dims& s);

}  // namespace streamrt::ops
