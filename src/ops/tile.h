// Host-side logic of Tile shared by src/ops/tile.cc and src/backends/cuda/kernels/tile.cu.
#pragma once

#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

// Checks that `repeats` has one non-negative value per input dim.
Status check_repeats(const ir::Node& node, const std::vector<int64_t>& repeats, size_t rank);

}  // namespace streamrt::ops
