// What the Python objects Engine and ExecutionContext hold. An engine can be closed while
// contexts of it are alive (their Python objects may outlive it): close() frees every context's
// state first, and a closed engine or context raises InvalidStateError on use.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "streamrt/builder.h"
#include "streamrt/cache.h"
#include "streamrt/runtime.h"

namespace streamrt::python {

struct EngineHandle;

struct ContextHandle {
  std::mutex mu;  // one run at a time; close() takes it too
  std::unique_ptr<ExecutionContext> ctx;
  std::shared_ptr<EngineHandle> engine;
  bool streaming_profiling = false, cuda_graph = false;  // as last set

  // The context, or InvalidStateError when it or its engine was closed. Call with `mu` held.
  ExecutionContext& get() const;
  // Frees the context's memory (waits for a run in flight on another thread).
  void close();
};

struct EngineHandle {
  std::shared_ptr<Engine> engine;
  std::string name;
  // Python-visible contexts, so that close() can free them (touched with the GIL held).
  std::vector<std::weak_ptr<ContextHandle>> contexts;
  std::optional<BuildReport> report;       // engines from build()
  std::optional<CachedBuildInfo> cache;    // build(..., cache_dir=...)

  Engine& get() const;
  void close();
};

// Helpers of engine.cc shared with program.cc.
std::string fspath(py::handle p);  // os.fspath(p)
// A size argument: a non-negative int, or a size string of the budget grammar ("64MiB").
uint64_t parse_size(py::handle v, const std::string& what);
// "cpu" | "cuda" | "auto" / None (CUDA when a GPU answers).
DeviceType resolve_device(const std::optional<std::string>& device);
// The builder options streamrt.build and streamrt.compile share; `sizes` may hold
// min_streamable_bytes and stream_chunk_bytes (int or size string).
BuilderConfig make_config(DeviceType device, const std::string& precision, bool weight_streaming,
                          const py::dict& shapes, const py::dict& profiles, const py::kwargs& sizes);

}  // namespace streamrt::python
