// The container of program files and engine records (see container.h).
#include "program/container.h"

#include <flatbuffers/flatbuffers.h>
#include <xxhash.h>

#include <cstring>
#include <string>

namespace streamrt::program {
namespace {

std::string num(uint64_t v) { return std::to_string(v); }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

std::vector<uint8_t> write_container(const ContainerFormat& f, std::span<const uint8_t> flatbuffer,
                                     std::span<const uint8_t> section) {
  ContainerHeader h{};
  std::memcpy(h.magic, f.magic, sizeof(h.magic));
  h.format_version = f.version;
  h.header_size = sizeof(ContainerHeader);
  h.flatbuffer_offset = sizeof(ContainerHeader);
  h.flatbuffer_size = flatbuffer.size();
  h.flatbuffer_checksum = XXH3_64bits(flatbuffer.data(), flatbuffer.size());
  uint64_t end = h.flatbuffer_offset + h.flatbuffer_size;
  if (!section.empty() || f.section_required) {
    h.section_offset = align_up(end, f.section_alignment);
    h.section_size = section.size();
    end = h.section_offset + h.section_size;
  }
  std::vector<uint8_t> out(end, 0);
  std::memcpy(out.data(), &h, sizeof(h));
  if (!flatbuffer.empty()) std::memcpy(out.data() + h.flatbuffer_offset, flatbuffer.data(), flatbuffer.size());
  if (!section.empty()) std::memcpy(out.data() + h.section_offset, section.data(), section.size());
  return out;
}

Result<ContainerView> read_container(const ContainerFormat& f, std::span<const uint8_t> bytes) {
  const uint8_t* data = bytes.data();
  const uint64_t size = bytes.size();
  auto bad = [](const std::string& msg) { return invalid_program(msg); };
  const std::string kind = f.kind;
  ContainerHeader h;
  if (size < sizeof(h.magic) || std::memcmp(data, f.magic, sizeof(h.magic)) != 0)
    return bad("not a streamrt " + kind + " (bad magic)");
  if (size < sizeof(h.magic) + sizeof(h.format_version))
    return bad("truncated header (" + num(size) + " of " + num(sizeof(h)) + " bytes)");
  uint32_t version = 0;
  std::memcpy(&version, data + sizeof(h.magic), sizeof(version));
  if (version != f.version)
    return incompatible(kind + " format version " + num(version) + ", this build reads version " + num(f.version));
  if (size < sizeof(h)) return bad("truncated header (" + num(size) + " of " + num(sizeof(h)) + " bytes)");
  std::memcpy(&h, data, sizeof(h));
  if (h.header_size != sizeof(h)) return bad("header_size is " + num(h.header_size) + ", expected " + num(sizeof(h)));
  if (h.reserved != 0) return bad("reserved header field is " + num(h.reserved) + ", expected 0");
  if (h.flatbuffer_offset != sizeof(h))
    return bad("FlatBuffer offset is " + num(h.flatbuffer_offset) + ", expected " + num(sizeof(h)) +
               " (right after the header)");
  if (h.flatbuffer_size == 0 || h.flatbuffer_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return bad("FlatBuffer size " + num(h.flatbuffer_size) + " is out of range");
  if (h.flatbuffer_size > size - h.flatbuffer_offset)
    return bad("FlatBuffer (offset " + num(h.flatbuffer_offset) + " + size " + num(h.flatbuffer_size) +
               ") extends past the end (" + num(size) + " bytes)");
  const uint64_t fb_end = h.flatbuffer_offset + h.flatbuffer_size;
  const std::string section = f.section_name;
  uint64_t end = fb_end;
  if (h.section_size == 0 && !f.section_required) {
    if (h.section_offset != 0) return bad(section + " offset " + num(h.section_offset) + " but size 0");
  } else {
    if (h.section_size == 0) return bad(section + " is empty");
    if (h.section_offset % f.section_alignment != 0)
      return bad(section + " offset " + num(h.section_offset) + " is not " + num(f.section_alignment) + "-byte aligned");
    if (h.section_offset < fb_end)
      return bad(section + " (offset " + num(h.section_offset) + ") overlaps the FlatBuffer (which ends at " +
                 num(fb_end) + ")");
    if (h.section_offset > size || h.section_size > size - h.section_offset)
      return bad(section + " (offset " + num(h.section_offset) + " + size " + num(h.section_size) +
                 ") extends past the end (" + num(size) + " bytes)");
    end = h.section_offset + h.section_size;
    for (uint64_t i = fb_end; i < h.section_offset; ++i)
      if (data[i] != 0) return bad("non-zero padding byte at offset " + num(i));
  }
  if (end != size) return bad(num(size - end) + " trailing bytes after the last part (which ends at " + num(end) + ")");
  const uint8_t* fb = data + h.flatbuffer_offset;
  const uint64_t got = XXH3_64bits(fb, h.flatbuffer_size);
  if (got != h.flatbuffer_checksum)
    return bad("FlatBuffer checksum mismatch (header " + num(h.flatbuffer_checksum) + ", computed " + num(got) + ")");
  // The identifier sits at bytes 4..7; a shorter buffer is rejected here, before the verifier.
  if (h.flatbuffer_size < 8 || std::memcmp(fb + 4, f.identifier, 4) != 0)
    return bad("the FlatBuffer does not carry the identifier '" + std::string(f.identifier, 4) + "'");
  ContainerView view{h, bytes.subspan(h.flatbuffer_offset, h.flatbuffer_size), {}};
  if (h.section_size) view.section = bytes.subspan(h.section_offset, h.section_size);
  return view;
}

}  // namespace streamrt::program
