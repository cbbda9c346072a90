// Tensors stored with room for more entries along one axis than their dims hold (a KV cache laid
// out for its capacity: TensorDesc::seq_capacity, ops::CapacityLayout). The dims are logical;
// element (i0, .., s, .., ik) sits where it would in a dense tensor whose dim `axis` were
// `capacity`. Shared by the runtime's binding checks, the public pack / unpack helpers and the
// KvAppend kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "streamrt/types.h"

namespace streamrt {

// The rows of such a tensor around its axis: `outer` blocks (the dims before the axis), each of
// `capacity` places of `inner` elements (the dims after it), of which the first `used` are set.
struct CapacityRows {
  int64_t outer = 1, used = 0, capacity = 0, inner = 1;
};

// The geometry of `dims` stored at `capacity` along `axis` (capacity 0: dense, capacity = used).
// nullopt when axis is outside the rank or dims[axis] exceeds the capacity.
std::optional<CapacityRows> capacity_rows(const Dims& dims, int64_t axis, int64_t capacity);

// Elements such a tensor occupies (dims_numel when dense); UINT64_MAX when the geometry is
// invalid or the count overflows, so a size check against it fails.
uint64_t stored_numel(const Dims& dims, int64_t axis, int64_t capacity);

// Host copies between the dense tensor (`esize`-byte elements) and its stored form; places past
// dims[axis] in `stored` are left as they are. The caller checked the geometry.
void copy_dense_to_stored(const CapacityRows& r, size_t esize, const void* dense, void* stored);
void copy_stored_to_dense(const CapacityRows& r, size_t esize, const void* stored, void* dense);

}  // namespace streamrt
