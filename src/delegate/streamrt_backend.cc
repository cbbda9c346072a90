// StreamRTBackend's adapter: program runtime types <-> the core (see streamrt_backend.h).
#include "delegate/streamrt_backend.h"

#include <charconv>

#include "core/guard.h"
#include "core/logging.h"

namespace streamrt::delegate {
namespace {

std::vector<EngineHandle*> engine_handles(const BackendOptionContext& ctx) {
  std::vector<EngineHandle*> out;
  for (DelegateHandle* h : ctx.handles()) out.push_back(static_cast<EngineHandle*>(h));
  return out;
}

Result<uint32_t> parse_count(const CompileSpec& s) {
  const std::string_view v = s.value_string();
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size())
    return invalid_program(std::string(kStreamRtBackendName) + ": compile spec " + s.key + " is '" + std::string(v) +
                           "', expected a decimal count");
  return n;
}

}  // namespace

Result<BudgetLevel> budget_level_from_options(std::span<const BackendOption> options, const std::string& where) {
  BudgetLevel level;
  for (const BackendOption& o : options) {
    std::optional<std::string>* slot = o.key == kBudgetKey ? &level.total
                                       : o.key == kBudgetPerEngineKey ? &level.per_engine
                                                                        : nullptr;
    if (!slot)
      return invalid_argument(where + ": unknown option '" + o.key + "' (known: " + kBudgetKey + ", " +
                              kBudgetPerEngineKey + ")");
    if (const std::string* s = std::get_if<std::string>(&o.value)) {
      *slot = *s;
    } else if (const int64_t* i = std::get_if<int64_t>(&o.value); i && *i >= 0) {
      *slot = std::to_string(*i);
    } else {
      const std::string shown = i ? std::to_string(*i) : "a bool";
      return invalid_argument(where + ": " + o.key + " is " + shown +
                              "; expected a budget string (\"8GiB\", \"50%\", \"auto\") or a non-negative byte count");
    }
  }
  return level;
}

Result<BakedSpecs> parse_compile_specs(std::span<const CompileSpec> specs) {
  BakedSpecs out;
  for (const CompileSpec& s : specs) {
    if (s.key == kBudgetKey) {
      out.budget.total = std::string(s.value_string());
    } else if (s.key == kBudgetPerEngineKey) {
      out.budget.per_engine = std::string(s.value_string());
    } else if (s.key == kEngineIndexKey) {
      SRT_ASSIGN_OR_RETURN(out.engine_index, parse_count(s));
    } else if (s.key == kEngineCountKey) {
      SRT_ASSIGN_OR_RETURN(out.engine_count, parse_count(s));
    } else {
      log_warning(std::string(kStreamRtBackendName) + ": unknown compile spec '" + s.key + "' ignored");
    }
  }
  return out;
}

Result<DelegateHandle*> StreamRtBackend::init(BackendInitContext& context, FreeableBuffer* processed,
                                              std::span<const CompileSpec> compile_specs) {
  return guard("StreamRt backend: init", [&]() -> Result<DelegateHandle*> {
    SRT_ASSIGN_OR_RETURN(BudgetLevel load_time,
                         budget_level_from_options(context.runtime_specs(),
                                                   std::string(kStreamRtBackendName) + " load-time options"));
    SRT_ASSIGN_OR_RETURN(BakedSpecs baked, parse_compile_specs(compile_specs));
    InitRequest req;
    req.record = {static_cast<const uint8_t*>(processed->data()), processed->size()};
    req.release_record = [processed] { processed->free(); };
    req.load_time = std::move(load_time);
    req.compile_time = std::move(baked.budget);
    req.engine_index = baked.engine_index;
    req.engine_count = baked.engine_count;
    req.group = context.load_id();
    SRT_ASSIGN_OR_RETURN(EngineHandle * h, core_.init(std::move(req)));
    return static_cast<DelegateHandle*>(h);
  });
}

Status StreamRtBackend::execute(BackendExecutionContext&, DelegateHandle* handle, std::span<EValue*> args) {
  return guard("StreamRt backend: execute", [&]() -> Status {
    auto* h = static_cast<EngineHandle*>(handle);
    const EngineRecord& rec = core_.record(h);
    const size_t n_in = rec.inputs.size();
    if (args.size() != n_in + rec.outputs.size())
      return invalid_argument("engine '" + rec.engine_name + "' takes " + std::to_string(n_in) + " inputs and " +
                              std::to_string(rec.outputs.size()) + " outputs, the call passes " +
                              std::to_string(args.size()) + " values");
    std::vector<Tensor> inputs, outputs;
    for (size_t i = 0; i < args.size(); ++i) {
      const Tensor* t = args[i]->tensor();
      if (!t && i < n_in)
        return invalid_argument("engine '" + rec.engine_name + "' input '" + rec.inputs[i] + "' is a " +
                                evalue_tag_name(args[i]->tag()) + ", expected a tensor");
      (i < n_in ? inputs : outputs).push_back(t ? *t : Tensor());
    }
    SRT_RETURN_IF_ERROR(core_.execute(h, inputs, outputs));
    for (size_t j = 0; j < outputs.size(); ++j) *args[n_in + j] = EValue(std::move(outputs[j]));
    return ok_status();
  });
}

void StreamRtBackend::destroy(DelegateHandle* handle) { core_.destroy(static_cast<EngineHandle*>(handle)); }

Status StreamRtBackend::set_option(BackendOptionContext& context, std::span<const BackendOption> options) {
  return guard("StreamRt backend: set_option", [&]() -> Status {
    SRT_ASSIGN_OR_RETURN(BudgetLevel level, budget_level_from_options(options, kStreamRtBackendName));
    std::vector<EngineHandle*> handles = engine_handles(context);
    return core_.set_budget(handles, level);
  });
}

Status StreamRtBackend::get_option(BackendOptionContext& context, std::span<BackendOption> options) {
  return guard("StreamRt backend: get_option", [&]() -> Status {
    std::vector<EngineHandle*> handles = engine_handles(context);
    const std::vector<EngineBudgetStatus> engines = core_.budgets(handles);
    for (BackendOption& o : options) {
      const bool budget = o.key.rfind(kBudgetKey, 0) == 0;
      const std::string_view base = budget ? kBudgetKey : "streamable_weights_size";
      auto value = [&](const EngineBudgetStatus& e) { return budget ? e.budget : e.streamable_size; };
      if (o.key == "num_engines") {
        o.value = static_cast<int64_t>(engines.size());
      } else if (o.key == base) {
        uint64_t total = 0;
        for (const auto& e : engines) total += value(e);
        o.value = std::to_string(total);
      } else if (o.key.size() > base.size() + 1 && o.key.rfind(base, 0) == 0 && o.key[base.size()] == '.') {
        const std::string_view n(o.key.data() + base.size() + 1, o.key.size() - base.size() - 1);
        size_t i = 0;
        auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), i);
        if (ec != std::errc() || end != n.data() + n.size() || i >= engines.size())
          return not_found(std::string(kStreamRtBackendName) + ": no option '" + o.key + "' (" +
                           std::to_string(engines.size()) + " engines)");
        o.value = std::to_string(value(engines[i]));
      } else {
        return not_found(std::string(kStreamRtBackendName) + ": no option '" + o.key + "'");
      }
    }
    return ok_status();
  });
}

namespace {
StreamRtBackend backend;
}  // namespace
STREAMRT_REGISTER_BACKEND(streamrt_backend, kStreamRtBackendName, &backend);

}  // namespace streamrt::delegate
