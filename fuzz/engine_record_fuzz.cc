// libFuzzer target for StreamRTBackend's engine record (src/delegate/engine_record.cc). Each
// input is read as given and resealed (container_fuzz_util.h). An accepted record must write
// back to a record that reads the same, and its plan goes through the plan reader (which must
// not crash on it either).
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "container_fuzz_util.h"
#include "delegate/engine_record.h"

namespace {

void check(const uint8_t* data, size_t size) {
  auto rec = streamrt::delegate::read_engine_record({data, size});
  if (!rec.ok()) {
    if (rec.status().message().empty()) std::abort();
    return;
  }
  auto again = streamrt::delegate::serialize_engine_record(rec->meta, rec->plan);
  auto back = streamrt::delegate::read_engine_record(again);
  if (!back.ok() || back->meta.engine_name != rec->meta.engine_name || back->meta.inputs != rec->meta.inputs ||
      back->meta.outputs != rec->meta.outputs || back->plan.size() != rec->plan.size())
    std::abort();
  auto plan = streamrt::plan::read_plan_bytes(rec->plan.data(), rec->plan.size(), nullptr);
  if (!plan.ok() && plan.status().message().empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  streamrt::fuzzing::check_as_given_and_resealed(data, size, check);
  return 0;
}
