// Det's shape rule, shared by the CPU kernel (det.cc) and the CUDA kernel
// (backends/cuda/kernels/det.cu).
#pragma once

#include "ops/op.h"

namespace streamrt::ops {

// Output dims of Det for input dims [*, M, M]: the batch dims [*]. kInvalidArgument naming the
// node when the rank is below 2 or the last two dims differ (dynamic dims pass).
Result<Dims> det_output_dims(const ir::Node& node, const Dims& x);

}  // namespace streamrt::ops
