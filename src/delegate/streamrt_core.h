// StreamRTBackend's logic, free of any host runtime's types: engine records, budget
// resolution and split across a program's engines, handles, execution on host tensors, and
// the live budget change. src/delegate/streamrt_backend.cc adapts it to streamrt's program
// runtime (EValue, FreeableBuffer, BackendInitContext, CompileSpec); an adapter for
// ExecuTorch's runtime would map its own types onto the same calls.
//
// Engines of one program instance form a group (InitRequest::group, e.g. the load id of the
// method; engine_index / engine_count are baked as compile specs). init deserializes each
// engine and, once the group is complete, resolves the budget for the whole group — load-time
// option, then compile-time value, then automatic (computed once for the group) —, applies
// each engine's share where it has streamable weights (an explicit budget on one without is
// logged and ignored), and only then creates the execution contexts. With one engine this all
// happens in its own init.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "delegate/budget.h"
#include "delegate/engine_record.h"
#include "streamrt/runtime.h"

namespace streamrt::delegate {

// Compile specs the compiler bakes next to the budget keys.
inline constexpr char kEngineIndexKey[] = "engine_index";
inline constexpr char kEngineCountKey[] = "engine_count";
// A program claiming more engines than this is malformed (bounds what a group allocates).
inline constexpr uint32_t kMaxEnginesPerProgram = 4096;

struct CoreOptions {
  // The automatic budget of a group, given its streamable engines (deserialized, without
  // execution contexts, each at budget 0). Default: free device memory minus what the engines'
  // contexts need (activations and streaming scratch) and a safety margin, clamped to the sum
  // of their streamable sizes. Tests inject their own.
  std::function<uint64_t(std::span<Engine* const>)> automatic_budget;
};

struct InitRequest {
  std::span<const uint8_t> record;
  std::function<void()> release_record;  // called as soon as the record's bytes are not needed
  // The host runtime's named data (ExecuTorch's NamedDataMap), asked for the weights section of
  // a record that names a weights_key (EngineRecord::weights_key); the engine reads them in place
  // until it is destroyed. Null: the host has none (such a record is then kInvalidProgram).
  std::function<Result<ExternalWeights>(const std::string& key)> named_data;
  BudgetLevel load_time, compile_time;
  uint32_t engine_index = 0, engine_count = 1;
  uint64_t group = 0;  // equal for the engines of one program instance
};

// One engine as get_option reports it.
struct EngineBudgetStatus {
  std::string engine_name;
  uint32_t engine_index = 0;
  uint64_t streamable_size = 0;
  uint64_t budget = 0;  // in force (0 for an engine without streamable weights)
};

class EngineHandle;
struct EngineGroup;

class StreamRtCore {
 public:
  explicit StreamRtCore(CoreOptions options = {});
  ~StreamRtCore();
  StreamRtCore(const StreamRtCore&) = delete;
  StreamRtCore& operator=(const StreamRtCore&) = delete;

  // Verifies the record (kInvalidProgram; kIncompatible for another record format, or a
  // device or plan this machine cannot run), deserializes the engine, joins its group and, when
  // the group is complete, applies the budgets and creates every engine's context. A malformed
  // budget value is kInvalidArgument naming the key and the value.
  Result<EngineHandle*> init(InitRequest request);
  const EngineRecord& record(const EngineHandle* handle) const;
  // Runs the engine on host tensors: inputs in the record's order (dtype and dims checked),
  // outputs allocated here unless they already have the right dtype and dims and are writable.
  // Executions of one engine are serialized; a live budget change waits for them.
  Status execute(EngineHandle* handle, std::span<const Tensor> inputs, std::span<Tensor> outputs);
  void destroy(EngineHandle* handle);

  // Live change for the groups of `handles`: the new level replaces the load-time one (the
  // compile-time value and automatic stay its fallbacks). Executions in flight finish first;
  // contexts are destroyed, budgets applied, contexts recreated. Any failure (malformed value,
  // out of memory) leaves every group with the budgets it had.
  Status set_budget(std::span<EngineHandle* const> handles, const BudgetLevel& level);
  std::vector<EngineBudgetStatus> budgets(std::span<EngineHandle* const> handles) const;

 private:
  Result<Runtime*> runtime_for(DeviceType device, const EngineRecord& rec);
  Status complete_group(EngineGroup& g);
  Status apply(EngineGroup& g, const BudgetRequest& request);
  uint64_t automatic_budget(std::span<Engine* const> engines) const;

  CoreOptions options_;
  std::mutex mu_;  // guards runtimes_ and groups_
  std::map<DeviceType, std::unique_ptr<Runtime>> runtimes_;
  std::map<uint64_t, std::weak_ptr<EngineGroup>> groups_;
};

}  // namespace streamrt::delegate
