// The container shared by the program file (.pte) and the engine record: a fixed 64-byte
// header, a FlatBuffer right after it, zero padding, and one trailing aligned section.
//
//   [ContainerHeader, 64 bytes, little endian]
//   [FlatBuffer, with the format's file identifier]
//   [zero padding to the section's alignment]
//   [section: raw bytes to the end of the file]
//
// read_container() checks, in this order: the magic; the format version (another one is
// kIncompatible, read before the rest so that a later format is not reported as corrupt);
// header_size == 64; reserved == 0; the FlatBuffer right after the header, non-empty, below the
// FlatBuffers size limit and inside the bytes; an absent section (size 0) has offset 0 unless
// the format requires one; a present section is aligned, after the FlatBuffer, and the bytes
// end exactly where it ends (without a section: where the FlatBuffer ends); the padding is
// zero; the FlatBuffer's XXH3-64 checksum; its file identifier. Failures carry the format's
// error code (kInvalidProgram for both formats) and a message naming the field.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "streamrt/status.h"

namespace streamrt::program {

#pragma pack(push, 1)
struct ContainerHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t header_size;       // sizeof(ContainerHeader)
  uint64_t flatbuffer_offset;  // right after the header
  uint64_t flatbuffer_size;
  uint64_t section_offset;    // aligned; 0 when the section is absent
  uint64_t section_size;
  uint64_t flatbuffer_checksum;  // XXH3_64bits of the FlatBuffer
  uint64_t reserved;             // 0
};
#pragma pack(pop)
static_assert(sizeof(ContainerHeader) == 64);

struct ContainerFormat {
  const char* magic;            // 8 bytes, e.g. "SRTPROG\0"
  uint32_t version;
  const char* identifier;       // the FlatBuffer's file identifier (4 characters)
  uint64_t section_alignment;
  bool section_required;
  const char* kind;             // "program", "engine record": in messages
  const char* section_name;     // "segments section", "plan"
};

// Header + FlatBuffer + padding + section.
std::vector<uint8_t> write_container(const ContainerFormat& f, std::span<const uint8_t> flatbuffer,
                                     std::span<const uint8_t> section);

struct ContainerView {
  ContainerHeader header;
  std::span<const uint8_t> flatbuffer;  // inside the bytes given
  std::span<const uint8_t> section;     // empty when absent
};
Result<ContainerView> read_container(const ContainerFormat& f, std::span<const uint8_t> bytes);

}  // namespace streamrt::program
