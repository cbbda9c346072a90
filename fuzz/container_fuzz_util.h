// Shared by the fuzz targets of formats in the program container (src/program/container.h):
// run a check on an input as given and "resealed" (the FlatBuffer checksum recomputed from the
// header's own offsets), since a mutated input almost never passes the checksum and the fuzzer
// would otherwise not reach the verifier and the semantic checks behind it.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "program/container.h"

namespace streamrt::fuzzing {

template <typename Check>
void check_as_given_and_resealed(const uint8_t* data, size_t size, Check check) {
  using program::ContainerHeader;
  check(data, size);
  if (size < sizeof(ContainerHeader)) return;
  std::vector<uint8_t> copy(data, data + size);
  ContainerHeader h;
  std::memcpy(&h, copy.data(), sizeof(h));
  if (h.flatbuffer_offset > size || h.flatbuffer_size > size - h.flatbuffer_offset) return;
  h.flatbuffer_checksum = XXH3_64bits(copy.data() + h.flatbuffer_offset, h.flatbuffer_size);
  std::memcpy(copy.data(), &h, sizeof(h));
  if (std::memcmp(copy.data(), data, sizeof(h)) != 0) check(copy.data(), copy.size());
}

}  // namespace streamrt::fuzzing
