// Shared by the plan fuzz targets: "reseals" a mutated plan (both header checksums recomputed
// from the header's own offsets), since a mutated input almost never passes the checksums and
// the fuzzer would otherwise not get past them into the verifiers.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "plan/plan.h"

namespace streamrt::fuzzing {

inline void reseal_plan(std::vector<uint8_t>& bytes) {
  using plan::PlanHeader;
  if (bytes.size() < sizeof(PlanHeader)) return;
  PlanHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  auto inside = [&](uint64_t off, uint64_t size) { return off <= bytes.size() && size <= bytes.size() - off; };
  if (inside(h.metadata_offset, h.metadata_size))
    h.metadata_checksum = XXH3_64bits(bytes.data() + h.metadata_offset, h.metadata_size);
  if (h.weights_size && inside(h.weights_offset, h.weights_size))
    h.weights_checksum = XXH3_64bits(bytes.data() + h.weights_offset, h.weights_size);
  std::memcpy(bytes.data(), &h, sizeof(h));
}

}  // namespace streamrt::fuzzing
