// Shared by the fuzz targets that RUN what a loader accepts (plan_run, plan_external): one
// execution on the CPU with every input at its profile's min or opt dims, zero-filled or with
// small deterministic values. Work is capped: inputs and outputs beyond kMaxRunBytes are not run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "streamrt/runtime.h"

namespace streamrt::fuzzing {

inline constexpr uint64_t kMaxRunBytes = 64ull << 20;

// Zeros (pattern 0) or small deterministic values (pattern 1: 0, 1, 2, ... mod 3, as bytes of
// any dtype: small ints, tiny floats), the input's bytes for `dims`.
inline std::vector<uint8_t> input_bytes(DataType t, const Dims& dims, int pattern) {
  std::vector<uint8_t> b(static_cast<size_t>(dims_numel(dims)) * dtype_size(t) + 1, 0);
  if (pattern == 1)
    for (size_t i = 0; i < b.size(); i += dtype_size(t)) b[i] = static_cast<uint8_t>(i / dtype_size(t) % 3);
  return b;
}

// One run with every input at its profile's min (which = 0) or opt (which = 1) dims. A failure
// must say why (else abort, which libFuzzer reports).
inline void run_at_profile(Engine& engine, int which) {
  auto ctx = engine.create_execution_context();
  if (!ctx.ok()) return;
  std::vector<std::vector<uint8_t>> buffers;
  for (const TensorDesc& d : engine.io_tensors()) {
    if (!d.is_input) continue;
    Dims dims = which == 0 ? d.min : d.opt;
    if (dims.empty()) dims = d.dims;
    if (!dims_static(dims)) return;
    auto n = checked_numel(dims, static_cast<int64_t>(kMaxRunBytes / std::max<size_t>(1, dtype_size(d.dtype))));
    if (!n.ok()) return;
    if (!(*ctx)->set_input_shape(d.name, dims).ok()) return;
    const uint64_t stored = d.storage_bytes(dims);  // a KV cache's capacity when it has one
    if (stored > kMaxRunBytes) return;
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
      auto n = checked_numel(*dims, static_cast<int64_t>(kMaxRunBytes / std::max<size_t>(1, dtype_size(d.dtype))));
      if (!n.ok() || d.storage_bytes(*dims) > kMaxRunBytes) return;
      bytes = d.storage_bytes(*dims);
    }
    buffers.emplace_back(bytes + 1, 0);
    if (!(*ctx)->set_tensor_address(d.name, buffers.back().data(), bytes).ok()) return;
  }
  Status st = (*ctx)->execute();
  if (!st.ok() && st.message().empty()) std::abort();  // every failure says why
}

// Both runs (min dims with zeros, opt dims with small values) of an engine within the caps.
inline void run_engine(Engine& engine) {
  if (engine.device_memory_size() > kMaxRunBytes || engine.weights_size() > kMaxRunBytes) return;
  run_at_profile(engine, 0);
  run_at_profile(engine, 1);
}

}  // namespace streamrt::fuzzing
