// Host-side logic of Concat shared by the CPU kernel (src/ops/concat.cc) and the CUDA kernel
// (src/backends/cuda/kernels/concat_split.cu).
#pragma once

#include "ops/op.h"

namespace streamrt::ops {

// Where the inputs go in output 0: the normalized axis and the row geometry around it.
struct ConcatLayout {
  size_t rank = 0;
  size_t axis = 0;
  int64_t outer = 1;  // product of the output dims before the axis
  int64_t inner = 1;  // product of the output dims after the axis
};

// Reads the axis and checks that output 0 is exactly the inputs laid side by side (an empty
// input of another rank is skipped, as onnxruntime does; the kernels skip it too).
Result<ConcatLayout> concat_layout(const KernelContext& ctx);

}  // namespace streamrt::ops
