// Softmax/LogSoftmax host-side parameter logic (axis and the opset < 13 2-D coercion), shared
// by the CPU kernel (softmax.cc) and the CUDA kernel (backends/cuda/kernels/softmax.cu).
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace streamrt::ops {

// The tensor viewed as [outer, dim, inner]; the op normalizes over `dim`.
struct SoftmaxGeometry {
  int64_t outer = 1;
  int64_t dim = 1;
  int64_t inner = 1;
};

// Normalized axis for `rank`. Opsets before 11 state no range; like Flatten they get axis ==
// rank too (coerced 2-D shape [N, 1]). From 11 on the range is [-rank, rank - 1].
Result<int64_t> softmax_axis(const ir::Node& node, int64_t rank);

// The [outer, dim, inner] view of static `dims` for `node`'s axis and opset.
Result<SoftmaxGeometry> softmax_geometry(const ir::Node& node, const Dims& dims);

}  // namespace streamrt::ops
