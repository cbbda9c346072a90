// TopK's shared pieces: parameters (host code for the CPU kernel topk.cc and the CUDA kernel
// backends/cuda/kernels/topk.cu) and the order both kernels sort by.
#pragma once

#include <cstdint>
#include <optional>

#include "ops/op.h"

#if defined(__CUDACC__)
#define SRT_TOPK_HD __host__ __device__
#else
#define SRT_TOPK_HD
#endif

namespace streamrt::ops {

struct TopKParams {
  int64_t outer = 1, dim = 1, inner = 1;  // X viewed as [outer, dim, inner]; select along dim
  int64_t k = 0;
  size_t axis = 0;  // normalized
  bool largest = true;
  Dims out_dims;  // X's dims with the axis replaced by k
};

// Axis (default -1) and largest (opset 11, default 1) of `node`, for static X `dims` and a
// known `k`; k outside [0, dims[axis]] is an error (kInvalidArgument: k is run-time data
// from opset 10 on). `sorted` needs nothing: the output is always sorted, which sorted = 0
// ("any order") allows.
Result<TopKParams> topk_params(const ir::Node& node, const Dims& dims, int64_t k);

// k from the 'k' attribute (opset < 10) or from the K input's values (one element).
Result<int64_t> topk_k(const ir::Node& node, const std::optional<std::vector<int64_t>>& k_input);

// Whether (a, ia) comes before (b, ib) in the output: larger (smaller) values first, equal
// values by lower index (the spec's tie rule), NaN after every number, as the ONNX reference
// (a lexsort on the values) orders them.
template <typename C>
SRT_TOPK_HD inline bool topk_before(C a, int64_t ia, C b, int64_t ib, bool largest) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan || b_nan) return a_nan == b_nan ? ia < ib : b_nan;
  if (a == b) return ia < ib;
  return largest ? a > b : a < b;
}

}  // namespace streamrt::ops
