// Host-side logic of Shape shared by src/ops/shape.cc and src/backends/cuda/kernels/shape.cu.
#pragma once

#include <utility>

#include "ops/op.h"

namespace streamrt::ops {

// The [start, end) range of dims that Shape reports for a rank-`rank` input, clamped as the
// spec says (opset 15's start / end attributes).
Result<std::pair<int64_t, int64_t>> shape_range(const ir::Node& node, int64_t rank);

}  // namespace streamrt::ops
