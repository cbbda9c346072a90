// libFuzzer target for StreamRTBackend's core (src/delegate/streamrt_core.cc) as a host
// runtime drives it at load: engine records (inline plans, or plan heads whose weights are
// named data), the named data, load-time options, compile specs, then a live budget change
// (delegate_init_input.h). Every failure must say why, and every buffer handed over must come
// back exactly once by the time the engines are destroyed: the record at init, the named data
// with its engine (or at once when init fails). Both are freed when released, so a read after
// the release is a use after free. Each input is tried as given and resealed: each record's
// FlatBuffer checksum, and its plan's checksums (the weights one from the named data its
// weights_key names, when the plan's weights are held apart).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "container_fuzz_util.h"
#include "delegate/engine_record.h"
#include "delegate_init_input.h"
#include "plan_fuzz_util.h"

namespace {

using namespace streamrt;

void check(const fuzzing::DelegateInput& in) {
  const fuzzing::DelegateRun run = fuzzing::run_delegate_input(in);
  if (!run.status.ok() && run.status.message().empty()) std::abort();
  if (run.records_released != static_cast<int>(run.inits) || run.data_released != run.data_taken) std::abort();
}

// The record with its container and plan checksums recomputed; false when nothing changed.
bool reseal_record(std::vector<uint8_t>& record, const fuzzing::DelegateInput& in) {
  const std::vector<uint8_t> given = record;
  if (!fuzzing::reseal_container(record)) return false;
  auto view = delegate::read_engine_record(record);
  if (!view.ok()) return record != given;
  std::span<uint8_t> plan(record.data() + (view->plan.data() - record.data()), view->plan.size());
  if (view->meta.weights_key.empty()) {
    fuzzing::reseal_plan(plan);
  } else {
    auto it = in.named_data.find(view->meta.weights_key);
    fuzzing::reseal_plan_apart(plan, it == in.named_data.end() ? std::span<const uint8_t>() : it->second);
  }
  return record != given;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  streamrt::fuzzing::DelegateInput in = streamrt::fuzzing::read_delegate_input({data, size});
  check(in);
  bool changed = false;
  for (auto& e : in.engines) changed |= reseal_record(e.record, in);
  if (changed) check(in);
  return 0;
}
