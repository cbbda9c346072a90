// Host-side logic of Split shared by the CPU kernel (src/ops/split.cc) and the CUDA kernel
// (src/backends/cuda/kernels/concat_split.cu).
#pragma once

#include <optional>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

struct SplitSpec {
  bool given = false;                          // explicit sizes present
  std::optional<std::vector<int64_t>> values;  // nullopt when given but unknown
  bool uneven_ok = false;                      // num_outputs given: last chunk may be smaller
};

// Sizes of the `n` outputs along an axis of length `dim` (-1 when dynamic); -1 where unknown.
Result<std::vector<int64_t>> split_sizes(const ir::Node& node, const SplitSpec& spec, int64_t dim, size_t n);

}  // namespace streamrt::ops
