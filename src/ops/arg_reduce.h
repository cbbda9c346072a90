// ArgMax / ArgMin's shared pieces: the attributes and [outer, dim, inner] view (host code,
// used by the CPU kernel arg_reduce.cc and the CUDA kernel arg_reduce.cu), and the element
// comparison, which Hardmax uses too (one rule for which element is "the" maximum).
#pragma once

#include <cstdint>

#include "ops/op.h"

#if defined(__CUDACC__)
#define SRT_ARG_HD __host__ __device__
#else
#define SRT_ARG_HD
#endif

namespace streamrt::ops {

struct ArgReduceParams {
  int64_t outer = 1, dim = 1, inner = 1;  // input viewed as [outer, dim, inner]; reduce dim
  bool is_max = true;
  bool select_last = false;  // select_last_index (opset 12)
  Dims out_dims;             // with keepdims applied
};

// Reads axis (default 0, in [-rank, rank)), keepdims (default 1) and select_last_index
// (default 0) of `node` for static input `dims`; errors name the node.
Result<ArgReduceParams> arg_reduce_params(const ir::Node& node, const Dims& dims);

// Whether v replaces the current best (the element chosen so far along the axis, scanned in
// index order): the first extreme wins, or the last one with select_last. NaN counts as the
// extreme (numpy's argmax / argmin pick the first NaN; with select_last, the last one).
template <typename C>
SRT_ARG_HD inline bool arg_better(C v, C best, bool is_max, bool select_last) {
  const bool v_nan = v != v;
  if (best != best) return select_last && v_nan;
  if (v_nan) return true;
  if (is_max) return select_last ? v >= best : v > best;
  return select_last ? v <= best : v < best;
}

}  // namespace streamrt::ops
