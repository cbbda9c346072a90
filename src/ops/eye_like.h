// EyeLike's host-side rules, shared by the CPU kernel (eye_like.cc) and the CUDA kernel
// (backends/cuda/kernels/eye_like.cu).
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace streamrt::ops {

// The output type: attribute `dtype` (an ONNX data type number) or, without it, `input`'s.
Result<DataType> eye_like_dtype(const ir::Node& node, DataType input);

// The bytes of the value 1 in `t` (float32 / float16 / bfloat16 / ints / bool), in the low
// dtype_size(t) bytes of the result (a little-endian host).
Result<uint64_t> one_bits(const ir::Node& node, DataType t);

// The diagonal offset `k` (default 0) clamped to [-rows, cols]: beyond that no element lies on
// the diagonal, and the clamp keeps i + k from overflowing.
Result<int64_t> eye_like_k(const ir::Node& node, int64_t rows, int64_t cols);

}  // namespace streamrt::ops
