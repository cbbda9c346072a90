// libFuzzer target for the program reader (src/program/program_reader.cc, container.cc,
// program_verify.cc). Each input is read as given and resealed (container_fuzz_util.h). An
// accepted program must serialize and read back again.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "container_fuzz_util.h"
#include "program/program_format.h"

namespace {

void check(const uint8_t* data, size_t size) {
  auto loaded = streamrt::program::read_program_bytes(data, size, nullptr);
  if (!loaded.ok()) {
    if (loaded.status().message().empty()) std::abort();  // every rejection says why
    return;
  }
  // An accepted program is consistent enough to be written and read again.
  std::vector<std::vector<uint8_t>> segments;
  for (size_t i = 0; i < loaded->data.segments.size(); ++i) {
    auto s = loaded->segment(i);
    segments.emplace_back(s.begin(), s.end());
  }
  auto again = streamrt::program::serialize_program(loaded->data, segments);
  if (!again.ok()) std::abort();
  if (!streamrt::program::read_program_bytes(again->data(), again->size(), nullptr).ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  streamrt::fuzzing::check_as_given_and_resealed(data, size, check);
  return 0;
}
