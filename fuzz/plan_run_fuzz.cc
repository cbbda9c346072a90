// libFuzzer target that RUNS what the plan loader accepts, on the CPU: a plan that passes
// read_plan's checks (plan.h) must execute without a crash, a sanitizer report or a huge
// allocation at its profile's min and opt shapes. Each input is tried as given and resealed
// (plan_fuzz_util.h). Work is capped: plans declaring more than kMaxBytes of activations or
// weights, or inputs beyond it, are loaded but not run, so an iteration stays fast.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "plan_fuzz_util.h"
#include "streamrt/runtime.h"

namespace {

using namespace streamrt;

constexpr uint64_t kMaxBytes = 64ull << 20;

// Zeros (pattern 0) or small deterministic values (pattern 1: 0, 1, 2, ... mod 3, as bytes of
// any dtype: small ints, tiny floats), the input's bytes for `dims`.
std::vector<uint8_t> input_bytes(DataType t, const Dims& dims, int pattern) {
  std::vector<uint8_t> b(static_cast<size_t>(dims_numel(dims)) * dtype_size(t) + 1, 0);
  if (pattern == 1)
    for (size_t i = 0; i < b.size(); i += dtype_size(t)) b[i] = static_cast<uint8_t>(i / dtype_size(t) % 3);
  return b;
}

// One run with every input at its profile's min (which = 0) or opt (which = 1) dims.
void run_once(Engine& engine, int which) {
  auto ctx = engine.create_execution_context();
  if (!ctx.ok()) return;
  std::vector<std::vector<uint8_t>> buffers;
  for (const TensorDesc& d : engine.io_tensors()) {
    if (!d.is_input) continue;
    Dims dims = which == 0 ? d.min : d.opt;
    if (dims.empty()) dims = d.dims;
    if (!dims_static(dims)) return;
    auto n = checked_numel(dims, static_cast<int64_t>(kMaxBytes / std::max<size_t>(1, dtype_size(d.dtype))));
    if (!n.ok()) return;
    if (!(*ctx)->set_input_shape(d.name, dims).ok()) return;
    const uint64_t stored = d.storage_bytes(dims);  // a KV cache's capacity when it has one
    if (stored > kMaxBytes) return;
    buffers.push_back(input_bytes(d.dtype, dims, which));
    buffers.back().resize(stored, 0);
    if (!(*ctx)->set_tensor_address(d.name, buffers.back().data(), buffers.back().size()).ok()) return;
  }
  for (const TensorDesc& d : engine.io_tensors()) {
    if (d.is_input) continue;
    // The output's size when known before the run; else a fixed buffer (the run then fails
    // cleanly if it needs more).
    uint64_t bytes = 1 << 16;
    if (auto dims = (*ctx)->tensor_shape(d.name); dims.ok()) {
      auto n = checked_numel(*dims, static_cast<int64_t>(kMaxBytes / std::max<size_t>(1, dtype_size(d.dtype))));
      if (!n.ok() || d.storage_bytes(*dims) > kMaxBytes) return;
      bytes = d.storage_bytes(*dims);
    }
    buffers.emplace_back(bytes + 1, 0);
    if (!(*ctx)->set_tensor_address(d.name, buffers.back().data(), bytes).ok()) return;
  }
  Status st = (*ctx)->execute();
  if (!st.ok() && st.message().empty()) std::abort();  // every failure says why
}

void check(const uint8_t* data, size_t size) {
  static auto runtime = Runtime::create({DeviceType::kCpu});
  if (!runtime.ok()) std::abort();
  auto engine = (*runtime)->load_engine_bytes(std::vector<uint8_t>(data, data + size));
  if (!engine.ok()) {
    if (engine.status().message().empty()) std::abort();
    return;
  }
  if ((*engine)->device_memory_size() > kMaxBytes || (*engine)->weights_size() > kMaxBytes) return;
  run_once(**engine, 0);
  run_once(**engine, 1);
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
