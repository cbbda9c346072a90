// The Reduce* ops' host-side parameter logic (which reduction, accepted dtypes, keepdims,
// noop_with_empty_axes, axes -> per-axis mask, identities), shared by the CPU kernel (reduce.cc)
// and the CUDA kernel (backends/cuda/kernels/reduce.cu).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

enum class Reduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

struct ReduceInfo {
  const char* op_type;
  Reduce op;
  unsigned types;  // DTypeSet bits accepted for the data input
};

// The entry of `op_type` (ReduceSum, ...); nullptr for a name that is not a reduction.
const ReduceInfo* reduce_info(const std::string& op_type);

// Whether dtype `t` is in the DTypeSet bits `set`.
bool reduce_dtype_in(DataType t, unsigned set);

struct ReduceAttrs {
  bool keepdims = true;
  bool noop_with_empty_axes = false;
};

Result<ReduceAttrs> reduce_attrs(const ir::Node& node);

// Per-axis "is reduced" flags from the (possibly absent / empty / negative) axes list.
Result<std::vector<bool>> reduced_mask(const ir::Node& node, const std::optional<std::vector<int64_t>>& axes,
                                       int64_t rank, bool noop);

// The value an empty reduction gives, in accumulator type A (double for floats, int64_t /
// uint64_t for signed / unsigned integers) of element type T: 1 for Prod, the lowest / highest value for Max / Min (-inf /
// +inf for floats), 0 for the others.
template <Reduce R, typename A, typename T>
A reduce_identity() {
  if constexpr (R == Reduce::kProd) {
    return A(1);
  } else if constexpr (R == Reduce::kMax || R == Reduce::kMin) {
    const bool max = R == Reduce::kMax;
    if constexpr (std::is_floating_point_v<A>) return max ? -INFINITY : INFINITY;
    else return max ? A(std::numeric_limits<T>::lowest()) : A(std::numeric_limits<T>::max());
  } else {
    return A(0);
  }
}

}  // namespace streamrt::ops
