// Slice's host-side parameter logic, shared by the CPU kernel (slice.cc) and the CUDA kernel
// (backends/cuda/kernels/slice.cu) so that both devices resolve starts/ends/axes/steps alike.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

// The strided view of the input that Slice copies: output dims, per-dim source strides in
// elements (step-scaled, 0 where an axis keeps one element) and the element offset of the first.
struct SliceView {
  Dims out_dims;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// Validates starts/ends/axes/steps (axes default 0..n-1, steps default 1) against the static
// `in_dims` and clamps them as the ONNX spec says. Errors name `node`.
Result<SliceView> resolve_slice(const ir::Node& node, const Dims& in_dims, std::vector<int64_t> starts,
                                std::vector<int64_t> ends, std::optional<std::vector<int64_t>> axes,
                                std::optional<std::vector<int64_t>> steps);

}  // namespace streamrt::ops
