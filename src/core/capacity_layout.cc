#include "core/capacity_layout.h"

#include <cstring>

namespace streamrt {

std::optional<CapacityRows> capacity_rows(const Dims& dims, int64_t axis, int64_t capacity) {
  const auto rank = static_cast<int64_t>(dims.size());
  if (capacity < 0 || axis < 0 || (capacity > 0 && axis >= rank)) return std::nullopt;
  if (capacity == 0) return CapacityRows{1, dims_numel(dims), dims_numel(dims), 1};
  CapacityRows r;
  r.used = dims[axis];
  r.capacity = capacity;
  if (r.used < 0 || r.used > capacity) return std::nullopt;
  for (int64_t k = 0; k < rank; ++k) {
    if (dims[k] < 0) return std::nullopt;
    if (k < axis) r.outer *= dims[k];
    if (k > axis) r.inner *= dims[k];
  }
  return r;
}

uint64_t stored_numel(const Dims& dims, int64_t axis, int64_t capacity) {
  if (capacity == 0) return static_cast<uint64_t>(dims_numel(dims));
  if (!capacity_rows(dims, axis, capacity)) return UINT64_MAX;
  uint64_t n = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    const auto d = static_cast<uint64_t>(static_cast<int64_t>(k) == axis ? capacity : dims[k]);
    if (__builtin_mul_overflow(n, d, &n)) return UINT64_MAX;
  }
  return n;
}

namespace {

// `outer` blocks of `block` bytes, `src_pitch` bytes apart in src and `dst_pitch` in dst.
void copy_blocks(int64_t outer, size_t block, const void* src, size_t src_pitch, void* dst, size_t dst_pitch) {
  for (int64_t o = 0; o < outer && block > 0; ++o)
    std::memcpy(static_cast<char*>(dst) + static_cast<size_t>(o) * dst_pitch,
                static_cast<const char*>(src) + static_cast<size_t>(o) * src_pitch, block);
}

size_t used_bytes(const CapacityRows& r, size_t esize) { return static_cast<size_t>(r.used * r.inner) * esize; }
size_t pitch_bytes(const CapacityRows& r, size_t esize) { return static_cast<size_t>(r.capacity * r.inner) * esize; }

}  // namespace

void copy_dense_to_stored(const CapacityRows& r, size_t esize, const void* dense, void* stored) {
  copy_blocks(r.outer, used_bytes(r, esize), dense, used_bytes(r, esize), stored, pitch_bytes(r, esize));
}

void copy_stored_to_dense(const CapacityRows& r, size_t esize, const void* stored, void* dense) {
  copy_blocks(r.outer, used_bytes(r, esize), stored, pitch_bytes(r, esize), dense, used_bytes(r, esize));
}

}  // namespace streamrt
