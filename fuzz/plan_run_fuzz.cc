// libFuzzer target that RUNS what the plan loader accepts, on the CPU: a plan that passes
// read_plan's checks (plan.h) must execute without a crash, a sanitizer report or a huge
// allocation at its profile's min and opt shapes (engine_run_util.h). Each input is tried as
// given and resealed (plan_fuzz_util.h).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine_run_util.h"
#include "plan_fuzz_util.h"

namespace {

using namespace streamrt;

void check(const uint8_t* data, size_t size) {
  static auto runtime = Runtime::create({DeviceType::kCpu});
  if (!runtime.ok()) std::abort();
  auto engine = (*runtime)->load_engine_bytes(std::vector<uint8_t>(data, data + size));
  if (!engine.ok()) {
    if (engine.status().message().empty()) std::abort();
    return;
  }
  fuzzing::run_engine(**engine);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(data, size);
  std::vector<uint8_t> copy(data, data + size);
  streamrt::fuzzing::reseal_plan(copy);
  if (size >= sizeof(streamrt::plan::PlanHeader) && std::memcmp(copy.data(), data, sizeof(streamrt::plan::PlanHeader)) != 0)
    check(copy.data(), copy.size());
  return 0;
}
