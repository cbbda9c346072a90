// ConvTranspose's geometry (opsets 1 and 11: the same semantics), shared by the CPU kernel
// (ops/conv_transpose.cc) and the CUDA kernel.
#pragma once

#include "ops/window.h"

namespace streamrt::ops {

struct ConvTransposeGeom {
  int64_t batch = -1, channels = -1, maps = -1, group = 1;  // N, C, M (= W.dims[1] * group)
  Window win;                  // kernel (W's trailing dims), strides, dilations
  Dims in, out;                // spatial dims of X and Y (-1 unknown)
  std::vector<int64_t> pads;   // effective [begin.., end..]; negative where output_shape extends Y
  Dims y() const;              // Y's full dims
};

// X is [N, C, D1..], W [C, M / group, k1..], B [M]. Output size per axis:
// stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end, unless
// output_shape (or auto_pad SAME_*: in * stride) fixes it and the total padding is split as the
// spec says (SAME_UPPER: the smaller half first; otherwise the larger first). Dims may be -1
// (shape inference); errors name the node.
Result<ConvTransposeGeom> conv_transpose_geom(const ir::Node& node, const Dims& x, const Dims& w, const Dims* b);

}  // namespace streamrt::ops
