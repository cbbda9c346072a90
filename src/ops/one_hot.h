// OneHot's host-side rules, shared by the CPU kernel (one_hot.cc) and the CUDA kernel
// (backends/cuda/kernels/one_hot.cu).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops/op.h"

namespace streamrt::ops {

// Depths above this are a corrupt or hostile model (far beyond any class count).
inline constexpr int64_t kMaxOneHotDepth = kMaxAttrExtent;

// The depth held by a one-element host tensor of any numeric type (floats truncate toward zero,
// as a cast to int64 does). Errors (naming `node`, with `code`) for other element counts and for
// depths outside [0, kMaxOneHotDepth].
Result<int64_t> one_hot_depth(const ir::Node& node, StatusCode code, DataType t, const void* data, int64_t numel);

// Attribute `axis` (default -1) normalized against the output rank, indices' rank + 1.
Result<int64_t> one_hot_axis(const ir::Node& node, int64_t indices_rank);

// An index value of any numeric type as int64: floats truncate; NaN, infinities and floats
// beyond +-2^62 become INT64_MIN, which no depth holds (the row is all 'off').
template <typename F>
constexpr int64_t one_hot_index(F v) {
  if constexpr (std::is_floating_point_v<F>) {
    if (!(v > -0x1p62 && v < 0x1p62)) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
  } else {
    return static_cast<int64_t>(v);
  }
}

// Which slot of the depth axis index v lights: v, or v + depth for a negative v from opset 11
// (opset 9 lights none for it); -1 when none.
constexpr int64_t one_hot_slot(int64_t v, int64_t depth, bool wrap_negative) {
  if (v < 0 && wrap_negative && v >= -depth) v += depth;
  return v >= 0 && v < depth ? v : -1;
}

}  // namespace streamrt::ops
