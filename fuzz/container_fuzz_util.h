// Shared by the fuzz targets of formats in the program container (src/program/container.h):
// run a check on an input as given and "resealed" (the FlatBuffer checksum recomputed from the
// header's own offsets), since a mutated input almost never passes the checksum and the fuzzer
// would otherwise not reach the verifier and the semantic checks behind it.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "program/container.h"

namespace streamrt::fuzzing {

// The FlatBuffer checksum recomputed in place; false when the header's offsets lie outside.
inline bool reseal_container(std::span<uint8_t> bytes) {
  using program::ContainerHeader;
  if (bytes.size() < sizeof(ContainerHeader)) return false;
  ContainerHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.flatbuffer_offset > bytes.size() || h.flatbuffer_size > bytes.size() - h.flatbuffer_offset) return false;
  h.flatbuffer_checksum = XXH3_64bits(bytes.data() + h.flatbuffer_offset, h.flatbuffer_size);
  std::memcpy(bytes.data(), &h, sizeof(h));
  return true;
}

template <typename Check>
void check_as_given_and_resealed(const uint8_t* data, size_t size, Check check) {
  check(data, size);
  std::vector<uint8_t> copy(data, data + size);
  if (!reseal_container(copy)) return;
  if (std::memcmp(copy.data(), data, sizeof(program::ContainerHeader)) != 0) check(copy.data(), copy.size());
}

}  // namespace streamrt::fuzzing
