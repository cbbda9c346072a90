// Constant's value attribute, shared by the CPU and CUDA kernels.
#pragma once

#include <string>

#include "ir/graph.h"

namespace streamrt::ops {

// The name of the one value attribute the node carries ("value", "value_float", ...);
// kInvalidModel when it has none or several.
Result<std::string> constant_value_key(const ir::Node& node);

}  // namespace streamrt::ops
