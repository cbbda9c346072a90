// Host-side logic of Transpose shared by the CPU kernel (src/ops/transpose.cc) and the CUDA
// kernel (src/backends/cuda/kernels/transpose.cu).
#pragma once

#include "ops/data_movement.h"

namespace streamrt::ops {

// The permutation for `rank`: the 'perm' attribute (checked to be a permutation) or the reverse.
Result<std::vector<int64_t>> resolve_perm(const ir::Node& node, size_t rank);

// Checks input 0 and output 0, and gives the strided view of input 0 whose dense copy is
// output 0 (input dims and strides taken in 'perm' order).
Result<StridedView> transpose_view(const KernelContext& ctx);

}  // namespace streamrt::ops
