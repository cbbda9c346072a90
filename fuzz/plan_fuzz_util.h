// Shared by the plan fuzz targets: "reseals" a mutated plan (both header checksums recomputed
// from the header's own offsets), since a mutated input almost never passes the checksums and
// the fuzzer would otherwise not get past them into the verifiers.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "plan/plan.h"

namespace streamrt::fuzzing {

// The metadata checksum, and (when the header's weights section lies inside `bytes`) the
// weights checksum.
inline void reseal_plan(std::span<uint8_t> bytes) {
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

// A plan head whose weights section is held apart (plan::read_plan_external): the metadata
// checksum, and the header's weights size and checksum made those of `weights`, as a crafted
// plan head and .ptd would have them.
inline void reseal_plan_apart(std::span<uint8_t> head, std::span<const uint8_t> weights) {
  using plan::PlanHeader;
  reseal_plan(head);
  if (head.size() < sizeof(PlanHeader)) return;
  PlanHeader h;
  std::memcpy(&h, head.data(), sizeof(h));
  h.weights_size = weights.size();
  h.weights_checksum = weights.empty() ? 0 : XXH3_64bits(weights.data(), weights.size());
  std::memcpy(head.data(), &h, sizeof(h));
}

}  // namespace streamrt::fuzzing
