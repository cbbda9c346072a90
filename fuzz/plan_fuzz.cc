// libFuzzer target for the plan reader (src/plan/plan_reader.cc).
// Each input is read twice: as given, and "resealed" (both header checksums recomputed from
// the header's own offsets), because a mutated input almost never passes the checksums and
// the fuzzer would otherwise not get past them into the FlatBuffers verifier and the
// semantic checks. A plan that is accepted must serialize and read back again.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "plan_fuzz_util.h"
#include "plan/plan.h"

namespace {

using streamrt::plan::PlanHeader;
using streamrt::fuzzing::reseal_plan;

void check(const uint8_t* data, size_t size) {
  auto loaded = streamrt::plan::read_plan_bytes(data, size, nullptr);
  if (!loaded.ok()) {
    // Every rejection says why.
    if (loaded.status().message().empty()) std::abort();
    return;
  }
  // An accepted plan is consistent enough to be written and read again.
  auto again = streamrt::plan::serialize_plan(loaded->data);
  if (!again.ok()) std::abort();
  if (!streamrt::plan::read_plan_bytes(again->data(), again->size(), nullptr).ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(data, size);
  std::vector<uint8_t> copy(data, data + size);
  reseal_plan(copy);
  if (size >= sizeof(PlanHeader) && std::memcmp(copy.data(), data, sizeof(PlanHeader)) != 0)
    check(copy.data(), copy.size());
  return 0;
}
