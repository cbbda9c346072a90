// Host-side logic of DepthToSpace / SpaceToDepth shared by the CPU kernel
// (src/ops/depth_to_space.cc) and the CUDA kernel (src/backends/cuda/kernels/depth_to_space.cu).
#pragma once

#include "ops/data_movement.h"

namespace streamrt::ops {

// Checks the node's attributes, input 0 (4-D NCHW) and output 0, and gives the strided view of
// input 0 (a 6-D reshape + permutation) whose dense copy is output 0.
Result<StridedView> depth_space_view(const KernelContext& ctx);

}  // namespace streamrt::ops
