// StreamRTBackend inside ExecuTorch's own runtime (PyPI executorch==1.5.1): the second thin
// adapter over the backend core (src/delegate/streamrt_core.h), beside the one for streamrt's
// program runtime (src/delegate/streamrt_backend.cc). libstreamrt_executorch.so registers it as
// "StreamRTBackend" in ExecuTorch's backend registry when it is loaded (C++: linked; Python:
// ctypes.CDLL(path, RTLD_GLOBAL) after `import torch`), so both executorch::extension::Module
// and the Python executorch.runtime find it.
//
// Processed blob: an engine record (src/delegate/engine_record.h). A record that names a
// weights_key holds its plan's weights apart, in the program's named data (a .ptd, or the .pte's
// own): init takes them from BackendInitContext::get_named_data_map() and the engine reads that
// FreeableBuffer in place (mapped from the file by ExecuTorch's mmap loader, or the one copy its
// file loader makes) until destroy frees it. Missing, truncated or corrupt named data is
// InvalidProgram naming the key. Compile specs: engine_index,
// engine_count (decimal strings), weight_streaming_budget / weight_streaming_budget_per_engine
// (the budget baked at export). Load-time options (Module::load(LoadBackendOptionsMap), read
// through BackendInitContext::runtime_specs): weight_streaming_budget (the program's total, split
// across its engines) or weight_streaming_budget_per_engine, as a budget string ("8GiB", "50%",
// "auto", bytes) or a non-negative int; budgets above 2^31 travel as strings (ExecuTorch's int
// options are 32-bit). Precedence: load-time option, then the baked value, then automatic
// (computed once per program and split). An unknown option key is InvalidArgument.
//
// The engines of one program instance are grouped by (method allocator, method name): ExecuTorch
// gives every loaded method its own allocator for as long as the method lives.
//
// After load, ExecuTorch's set_option / get_option are process-wide (no handle reaches the
// backend), so they act on every StreamRT engine loaded in the process, in load order:
//   set_option  weight_streaming_budget | weight_streaming_budget_per_engine: the new level
//               replaces the load-time one for every loaded program (contexts are recreated
//               between executions; a failed change keeps the old budgets). InvalidState when
//               no engine is loaded.
//   get_option  weight_streaming_budget (total in force), weight_streaming_budget.<i> (engine i),
//               streamable_weights_size[.<i>] — decimal strings of bytes — and num_engines (int).
// Every failure is logged (ET_LOG) with streamrt's message; ExecuTorch's Error carries the code:
// a malformed record InvalidProgram, another record version or device DelegateInvalidCompatibility,
// a malformed option InvalidArgument.
#pragma once

#include <executorch/runtime/backend/interface.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "delegate/streamrt_core.h"
#include "streamrt/program.h"

namespace streamrt::et {

namespace etr = ::executorch::runtime;
using delegate::BudgetLevel;
using delegate::CoreOptions;
using delegate::EngineHandle;
using delegate::EngineRecord;
using delegate::StreamRtCore;

inline constexpr char kBackendName[] = "StreamRTBackend";

// Stores `v` as an option's string value (truncated to ExecuTorch's 255 characters).
void set_string(etr::BackendOption& o, const std::string& v);
// streamrt's status code as ExecuTorch's Error (the message goes to the log).
etr::Error to_et_error(const Status& st);

class ExecuTorchBackend final : public etr::BackendInterface {
 public:
  ExecuTorchBackend();
  ~ExecuTorchBackend() override;

  bool is_available() const override { return true; }  // each engine checks its device at init
  etr::Result<etr::DelegateHandle*> init(etr::BackendInitContext& context, etr::FreeableBuffer* processed,
                                         etr::ArrayRef<etr::CompileSpec> compile_specs) const override;
  etr::Error execute(etr::BackendExecutionContext& context, etr::DelegateHandle* handle,
                     etr::Span<etr::EValue*> args) const override;
  void destroy(etr::DelegateHandle* handle) const override;
  etr::Error set_option(etr::BackendOptionContext& context, const etr::Span<etr::BackendOption>& options) override;
  etr::Error get_option(etr::BackendOptionContext& context, etr::Span<etr::BackendOption>& options) override;

  // Load scopes (for loaders without load-time options: the Python runtime). Between
  // begin_load and end_load, the engines ExecuTorch initializes on the calling thread take
  // `options` as their load-time options when ExecuTorch passes none, and belong to the
  // returned scope (> 0), which set_budget / report below can address alone.
  uint64_t begin_load(std::vector<BackendOption> options);
  void end_load(uint64_t scope);
  // set_option / get_option for the engines of `scope` (0: every loaded engine).
  Status set_budget(uint64_t scope, std::span<const BackendOption> options);
  Status report(uint64_t scope, etr::Span<etr::BackendOption>& options) const;

  // Engines loaded now, and destroy calls that released one since the library was loaded.
  size_t loaded_engines() const;
  uint64_t destroyed_engines() const;
  // Tests: a fresh core with `options` (e.g. an injected automatic budget). kInvalidState while
  // an engine is loaded.
  Status reset_core(CoreOptions options);

 private:
  Status init_engine(etr::BackendInitContext& context, etr::FreeableBuffer* processed,
                     etr::ArrayRef<etr::CompileSpec> compile_specs, EngineHandle** out) const;
  Status run(EngineHandle* h, etr::Span<etr::EValue*> args) const;
  std::vector<EngineHandle*> in_scope(uint64_t scope) const;  // with mu_ held

  mutable std::mutex mu_;  // guards loaded_ and destroyed_; core_ is replaced only with none loaded
  std::unique_ptr<StreamRtCore> core_;
  mutable std::vector<EngineHandle*> loaded_;  // in load order
  mutable uint64_t destroyed_ = 0;
  mutable std::unordered_map<EngineHandle*, uint64_t> scope_of_;  // engines loaded inside a scope
  uint64_t next_scope_ = 1;
};

// Ahead of time: the engine record around `plan` (a plan file's bytes, verified here).
Status engine_record_of_plan(std::span<const uint8_t> plan, std::vector<uint8_t>& out);
// Ahead of time, weights held apart: the record of the plan file at `plan_path` (verified here)
// carrying the plan up to the end of its metadata and `weights_key`, the named data that is to
// hold the weights section, bytes [parts.weights_offset, +parts.weights_size) of the file. A plan
// without a weights section gives an ordinary record (parts.weights_size 0, no key).
Status engine_record_apart(const std::string& plan_path, const std::string& weights_key, std::vector<uint8_t>& out,
                           plan::PlanParts& parts);

// A .ptd (ExecuTorch named data) checked before ExecuTorch reads it: ExecuTorch 1.5.1 does not
// verify its FlatBuffer, and a corrupted one crashes its loader (FlatTensorDataMap::load) before
// any backend is asked. InvalidProgram naming what is wrong: the FlatTensor header, the FlatBuffer
// and the segment data inside the file, the FlatBuffers verifier, every segment inside the segment
// data, every named entry's segment in range. check_ptd_file reads only the header and the
// FlatBuffer (kIoError when it cannot). Loading a .ptd from elsewhere, call it first (ptd_check.cc).
Status check_ptd(std::span<const uint8_t> ptd);
Status check_ptd_file(const std::string& path);

// The instance registered in ExecuTorch's registry when the library was loaded.
ExecuTorchBackend& registered_backend();

}  // namespace streamrt::et

// For loaders that cannot reach ExecuTorch's C++ set_option / get_option (the Python runtime
// binds neither): ctypes calls these. `value` is a budget string; get writes a NUL-terminated
// string (num_engines as decimal) into `out` of `size` bytes. Both return ExecuTorch's Error code
// (0 = Ok).
extern "C" int streamrt_executorch_set_option(const char* key, const char* value);
extern "C" int streamrt_executorch_get_option(const char* key, char* out, size_t size);

// For streamrt.executorch (Python). Each returns ExecuTorch's Error code (0 = Ok); after a
// failure, streamrt_executorch_last_error() holds streamrt's message (per thread).
extern "C" const char* streamrt_executorch_last_error(void);
// The load-time options of a load scope (see ExecuTorchBackend::begin_load): `count` pairs of
// key / value strings (budget keys only). Writes the scope id to `scope`. Clears the calling
// thread's last error: after a failed load in the scope, a non-empty last error is StreamRTBackend's.
extern "C" int streamrt_executorch_begin_load(const char* const* keys, const char* const* values, size_t count,
                                             uint64_t* scope);
extern "C" int streamrt_executorch_end_load(uint64_t scope);
// set_option / get_option for the engines of one load scope (0: every loaded engine).
extern "C" int streamrt_executorch_set_scope_option(uint64_t scope, const char* key, const char* value);
extern "C" int streamrt_executorch_get_scope_option(uint64_t scope, const char* key, char* out, size_t size);
// Checks a budget string with streamrt's parser ("8GiB", "50%", "auto", bytes; "" is refused).
extern "C" int streamrt_executorch_check_budget(const char* value);
// Ahead of time: the engine record (StreamRTBackend's processed blob) around a plan file's
// bytes, for a plan built with streamrt.build. Writes its size to `needed`, and the record to
// `out` when `size` >= that (call with out = NULL first).
extern "C" int streamrt_executorch_engine_record(const uint8_t* plan, size_t plan_size, uint8_t* out, size_t size,
                                                size_t* needed);
// The same with the weights held apart (engine_record_apart): the plan file at `plan_path`; writes
// the record's size to `needed` (the record to `out` when `size` >= that) and where the weights
// section lies in the file to `weights_offset` / `weights_size` (0: none, nothing to hold apart).
extern "C" int streamrt_executorch_engine_record_apart(const char* plan_path, const char* weights_key, uint8_t* out,
                                                      size_t size, size_t* needed, uint64_t* weights_offset,
                                                      uint64_t* weights_size);
// check_ptd_file (above) for streamrt.executorch.load's data_path: 0 when the .ptd is well formed.
extern "C" int streamrt_executorch_check_ptd(const char* path);
