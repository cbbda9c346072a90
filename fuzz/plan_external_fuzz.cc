// libFuzzer target for a plan whose weights section is held apart (ExecuTorch named data, a
// .ptd): plan head and weights section, both mutated (plan_external_input.h), through
// Runtime::load_engine_bytes(head, ExternalWeights) on the CPU. What loads is run at its
// profile's min and opt shapes (engine_run_util.h), and again streaming every streamable weight
// from the section (budget 0). The section is freed when the engine releases it, so a read
// after the release is a use after free; release must run exactly once, also when loading
// fails. Each input is tried as given and resealed: the head's metadata checksum and its weights
// size and checksum made those of the section (plan_fuzz_util.h).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine_run_util.h"
#include "plan_external_input.h"
#include "plan_fuzz_util.h"

namespace {

using namespace streamrt;

void check(const fuzzing::PlanApartInput& in) {
  static auto runtime = Runtime::create({DeviceType::kCpu});
  if (!runtime.ok()) std::abort();
  int released = 0;
  {
    auto engine = fuzzing::load_plan_apart(**runtime, in, &released);
    if (!engine.ok()) {
      if (engine.status().message().empty() || released != 1) std::abort();
      return;
    }
    fuzzing::run_engine(**engine);
    if ((*engine)->streamable_weights_size() > 0 && (*engine)->set_weight_streaming_budget(0).ok())
      fuzzing::run_engine(**engine);
    if (released > 1) std::abort();
  }
  if (released != 1) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  streamrt::fuzzing::PlanApartInput in = streamrt::fuzzing::read_plan_apart({data, size});
  check(in);
  const std::vector<uint8_t> given = in.head;
  streamrt::fuzzing::reseal_plan_apart(in.head, in.weights);
  if (in.head != given) check(in);
  return 0;
}
