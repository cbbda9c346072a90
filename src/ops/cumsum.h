// CumSum's host-side parameters, shared by the CPU kernel (cumsum.cc) and the CUDA kernel
// (backends/cuda/kernels/cumsum.cu).
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace streamrt::ops {

struct CumSumParams {
  int64_t outer = 1, dim = 1, inner = 1;  // x viewed as [outer, dim, inner]; scan along dim
  bool exclusive = false;
  bool reverse = false;
};

// Attributes exclusive / reverse (0 / 1, default 0) and the axis value `axis` (in [-rank,
// rank)) for static x `dims`; errors name the node.
Result<CumSumParams> cumsum_params(const ir::Node& node, const Dims& dims, int64_t axis);

// The axis input of data type `dtype` and shape `dims` holding `values` (read on the host): an
// int32 / int64 tensor of one element (a scalar per the spec; a [1] tensor is accepted too).
Result<int64_t> cumsum_axis(const ir::Node& node, DataType dtype, const Dims& dims,
                            const std::vector<int64_t>& values);

}  // namespace streamrt::ops
