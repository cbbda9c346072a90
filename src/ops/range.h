// Range's host-side length rule, shared by the CPU kernel (range.cc) and the CUDA kernel
// (backends/cuda/kernels/range.cu).
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace streamrt::ops {

// max(ceil((limit - start) / delta), 0) for the scalars at `start`, `limit`, `delta` (host
// pointers to one value of dtype `t`: float32, int32 or int64). Errors (naming `node`) for a zero
// delta, a NaN length, a length over 2^40 and other dtypes.
Result<int64_t> range_length(const ir::Node& node, DataType t, const void* start, const void* limit,
                             const void* delta);

}  // namespace streamrt::ops
