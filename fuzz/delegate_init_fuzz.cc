// libFuzzer target for StreamRTBackend's core (src/delegate/streamrt_core.cc) as a host
// runtime drives it at load: engine records (inline plans, or plan heads whose weights are
// named data), the named data, load-time options, compile specs, then a live budget change
// (delegate_init_input.h). Every failure must say why, and every buffer handed over must come
// back exactly once by the time the engines are destroyed: the record at init, the named data
// with its engine (or at once when init fails). Both are freed when released, so a read after
// the release is a use after free. Each input is tried as given and resealed: each record's
// FlatBuffer checksum, and its plan's checksums (the weights one from the named data its
// weights_key names, when the plan's weights are held apart). Work is capped as plan_run's:
// inputs whose plans declare more than kMaxRunBytes of activations are not initialized (init
// creates the execution contexts, whose arena the CPU backend allocates).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "container_fuzz_util.h"
#include "delegate/engine_record.h"
#include "delegate_init_input.h"
#include "engine_run_util.h"
#include "plan/plan_generated.h"
#include "plan_fuzz_util.h"

namespace {

using namespace streamrt;

// True when a record's plan metadata (verified as FlatBuffers, nothing else) declares an
// activation arena above the cap.
bool declares_large_arena(const fuzzing::DelegateInput& in) {
  for (const auto& e : in.engines) {
    auto view = delegate::read_engine_record(e.record);
    if (!view.ok() || view->plan.size() < sizeof(plan::PlanHeader)) continue;
    plan::PlanHeader h;
    std::memcpy(&h, view->plan.data(), sizeof(h));
    if (h.metadata_size == 0 || h.metadata_offset > view->plan.size() ||
        h.metadata_size > view->plan.size() - h.metadata_offset)
      continue;
    std::vector<uint64_t> meta((h.metadata_size + 7) / 8);  // aligned for the FlatBuffer's scalars
    std::memcpy(meta.data(), view->plan.data() + h.metadata_offset, h.metadata_size);
    const auto* buf = reinterpret_cast<const uint8_t*>(meta.data());
    flatbuffers::Verifier verifier(buf, h.metadata_size);
    if (plan::fb::VerifyPlanBuffer(verifier) && plan::fb::GetPlan(buf)->arena_size() > fuzzing::kMaxRunBytes)
      return true;
  }
  return false;
}

void check(const fuzzing::DelegateInput& in) {
  if (declares_large_arena(in)) return;
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
