// MeanVarianceNormalization (opsets 9, 13): which axes it reduces, for both devices.
#pragma once

#include "ops/op.h"

namespace streamrt::ops {

// The `axes` attribute (default [0, 2, 3]) normalized against X's rank, sorted, without repeats;
// kInvalidModel naming the node when out of range.
Result<std::vector<int64_t>> mvn_axes(const ir::Node& node, size_t rank);

}  // namespace streamrt::ops
