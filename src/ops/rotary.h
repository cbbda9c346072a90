// Rotary (rotary position embedding, rotate-half form): see rotary.cc. Shared with the CUDA kernel.
#pragma once

#include "ops/op.h"

namespace streamrt::ops {

// kInvalidArgument unless cos and sin broadcast to X's shape without enlarging it.
Status rotary_check_broadcast(const ir::Node& node, const Dims& x, const Dims& c, const Dims& s);

}  // namespace streamrt::ops
