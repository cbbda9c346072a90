// StreamRTBackend: the adapter between streamrt's program runtime (include/streamrt/backend.h)
// and the device-agnostic core (streamrt_core.h). Registered as "StreamRTBackend".
//
// Options, at load (LoadBackendOptionsMap, read with get_runtime_spec) and after it
// (Module::set_backend_option, through set_option):
//   weight_streaming_budget             the program's total budget (a budget string, e.g.
//                                       "8GiB", "50%", "auto", or a non-negative int of bytes)
//   weight_streaming_budget_per_engine  each engine's budget
// Any other key is kInvalidArgument (a misspelt budget must not pass unnoticed).
// get_option reports, as decimal strings of bytes: weight_streaming_budget (the total in
// force), weight_streaming_budget.<i> (engine i, in program order), streamable_weights_size and
// streamable_weights_size.<i>; num_engines as an int.
// Compile specs: weight_streaming_budget / weight_streaming_budget_per_engine (the baked
// budget), engine_index and engine_count (decimal strings).
#pragma once

#include "delegate/streamrt_core.h"
#include "streamrt/backend.h"

namespace streamrt::delegate {

inline constexpr char kStreamRtBackendName[] = "StreamRTBackend";

// The budget keys among `options` (strings or non-negative ints); kInvalidArgument naming an
// unknown key or a value of another type.
Result<BudgetLevel> budget_level_from_options(std::span<const BackendOption> options, const std::string& where);

struct BakedSpecs {
  BudgetLevel budget;
  uint32_t engine_index = 0, engine_count = 1;
};
// The compile specs StreamRTBackend reads; kInvalidProgram for a malformed index or count.
Result<BakedSpecs> parse_compile_specs(std::span<const CompileSpec> specs);

class StreamRtBackend final : public BackendInterface {
 public:
  explicit StreamRtBackend(CoreOptions options = {}) : core_(std::move(options)) {}
  bool is_available() const override { return true; }  // each engine checks its own device at init
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               std::span<const CompileSpec> compile_specs) override;
  Status execute(BackendExecutionContext& context, DelegateHandle* handle, std::span<EValue*> args) override;
  void destroy(DelegateHandle* handle) override;
  Status set_option(BackendOptionContext& context, std::span<const BackendOption> options) override;
  Status get_option(BackendOptionContext& context, std::span<BackendOption> options) override;
  StreamRtCore& core() { return core_; }

 private:
  StreamRtCore core_;
};

}  // namespace streamrt::delegate
