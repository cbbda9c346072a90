// GroupNormalization (opsets 18 and 21): the layout both devices read from a node and X's dims.
#pragma once

#include "ops/op.h"

namespace streamrt::ops {

struct GroupNormGeometry {
  int64_t groups = 1;
  int64_t rows = 0;      // N * groups
  int64_t cols = 0;      // C / groups * spatial: one group of one image, contiguous
  int64_t spatial = 0;   // elements per channel
  int64_t params = 0;    // values of scale and bias: groups (opset 18) or C (opset 21)
  int64_t param_div = 1; // element (r, k) takes parameter ((r * cols + k) / param_div) % params
  float epsilon = 1e-5f;
};

// X [N, C, D1, ...] with num_groups dividing C. kInvalidModel naming the node otherwise;
// kUnsupported for a stash_type other than a float type.
Result<GroupNormGeometry> group_norm_geometry(const ir::Node& node, const Dims& x);

}  // namespace streamrt::ops
