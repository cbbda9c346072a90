// check_ptd / check_ptd_file (streamrt_executorch.h): a .ptd checked before ExecuTorch reads it.
// ExecuTorch 1.5.1's FlatTensorDataMap::load reads the FlatBuffer of a .ptd without running the
// FlatBuffers verifier: a corrupted file (one flipped byte of the root offset) makes it read
// outside the buffer and crash the process before any backend is asked. The checks here are the
// format's (the wheel's flat_tensor.fbs, compiled by flatc at build time): the extended header
// (ExecuTorch's own parser), every section inside the file, the verifier, every segment inside
// the segment data and every named entry's segment index in range.
#include <flatbuffers/flatbuffers.h>

#include <executorch/extension/flat_tensor/serialize/flat_tensor_header.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "streamrt_executorch.h"

namespace streamrt::et {
namespace {

// Internal linkage for the generated accessors: libexecutorch.so carries its own (another
// FlatBuffers version), and they must never meet.
#include "flat_tensor_generated.h"

using ::executorch::extension::FlatTensorHeader;

std::string num(uint64_t v) { return std::to_string(v); }

// `head`: the file's first bytes, at least through the end of its FlatBuffer when the header
// says where that is (the whole file, or as much as check_ptd_file read); `file_size`: the file's.
Status check_parts(std::span<const uint8_t> head, uint64_t file_size, const std::string& what) {
  auto h = FlatTensorHeader::Parse(head.data(), head.size());
  if (!h.ok()) {
    char code[16];
    std::snprintf(code, sizeof(code), "0x%x", static_cast<unsigned>(h.error()));
    return invalid_program(what + ": no valid FlatTensor header in its first " + num(head.size()) +
                           " bytes (ExecuTorch error " + code + ")");
  }
  const uint64_t fb_end = h->flatbuffer_offset + h->flatbuffer_size;
  if (h->flatbuffer_offset > file_size || h->flatbuffer_size > file_size - h->flatbuffer_offset)
    return invalid_program(what + ": its FlatBuffer (offset " + num(h->flatbuffer_offset) + ", " +
                           num(h->flatbuffer_size) + " bytes) extends past the end of the file (" + num(file_size) +
                           " bytes)");
  if (h->segment_base_offset < fb_end || h->segment_base_offset > file_size ||
      h->segment_data_size > file_size - h->segment_base_offset)
    return invalid_program(what + ": its segment data (offset " + num(h->segment_base_offset) + ", " +
                           num(h->segment_data_size) + " bytes) overlaps the FlatBuffer (which ends at " + num(fb_end) +
                           ") or extends past the end of the file (" + num(file_size) + " bytes)");
  if (fb_end > head.size() || fb_end >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return invalid_program(what + ": its FlatBuffer ends at " + num(fb_end) + ", past what could be read");
  flatbuffers::Verifier verifier(head.data(), static_cast<size_t>(fb_end));
  if (!flat_tensor_flatbuffer::VerifyFlatTensorBuffer(verifier))
    return invalid_program(what + ": its FlatBuffer (" + num(fb_end) + " bytes) fails the FlatBuffers verifier");
  const auto* ft = flat_tensor_flatbuffer::GetFlatTensor(head.data());
  const size_t segments = ft->segments() ? ft->segments()->size() : 0;
  for (size_t i = 0; i < segments; ++i) {
    const auto* s = ft->segments()->Get(i);
    if (s->offset() > h->segment_data_size || s->size() > h->segment_data_size - s->offset())
      return invalid_program(what + ": segment " + num(i) + " (offset " + num(s->offset()) + ", " + num(s->size()) +
                             " bytes) lies outside the segment data (" + num(h->segment_data_size) + " bytes)");
  }
  if (ft->named_data())
    for (const auto* d : *ft->named_data()) {
      if (!d->key()) return invalid_program(what + ": a named data entry has no key");
      if (d->segment_index() >= segments)
        return invalid_program(what + ": named data '" + d->key()->str() + "' names segment " +
                               num(d->segment_index()) + " of " + num(segments));
    }
  return ok_status();
}

}  // namespace

Status check_ptd(std::span<const uint8_t> ptd) { return check_parts(ptd, ptd.size(), "named data (.ptd)"); }

Status check_ptd_file(const std::string& path) {
  const std::string what = "named data file '" + path + "'";
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return io_error(what + ": cannot open it");
  const auto end = f.tellg();
  if (end < 0) return io_error(what + ": cannot tell its size");
  const uint64_t size = static_cast<uint64_t>(end);
  // The header first, then through the end of the FlatBuffer it names (bounded by the file).
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(size, FlatTensorHeader::kNumHeadBytes)));
  f.seekg(0);
  if (!f.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size())))
    return io_error(what + ": reading its header failed");
  if (auto h = FlatTensorHeader::Parse(head.data(), head.size());
      h.ok() && h->flatbuffer_offset <= size && h->flatbuffer_size <= size - h->flatbuffer_offset &&
      h->flatbuffer_offset + h->flatbuffer_size > head.size() &&
      h->flatbuffer_offset + h->flatbuffer_size < FLATBUFFERS_MAX_BUFFER_SIZE) {
    head.resize(static_cast<size_t>(h->flatbuffer_offset + h->flatbuffer_size));
    f.seekg(0);
    if (!f.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size())))
      return io_error(what + ": reading its FlatBuffer failed");
  }
  return check_parts(head, size, what);
}

}  // namespace streamrt::et
