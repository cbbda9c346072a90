// StreamRTBackend's adapter for ExecuTorch's runtime: ExecuTorch types <-> the core (see
// streamrt_executorch.h). Budget keys, compile specs and their validation are the program
// runtime adapter's (delegate/streamrt_backend.h), reached through streamrt's own option types.
#include "streamrt_executorch.h"

#include <executorch/runtime/platform/log.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>

#include "core/byte_size.h"
#include "core/guard.h"
#include "delegate/engine_record.h"
#include "delegate/streamrt_backend.h"
#include "et_tensors.h"

namespace streamrt::et {
namespace {

using etr::Error;

std::string_view bounded(const char* s, size_t max) { return {s, strnlen(s, max)}; }

std::vector<BackendOption> to_streamrt(etr::Span<const etr::BackendOption> options) {
  std::vector<BackendOption> out;
  for (const etr::BackendOption& o : options) {
    BackendOption b{std::string(bounded(o.key, etr::kMaxOptionKeyLength)), false};
    if (const bool* v = std::get_if<bool>(&o.value)) b.value = *v;
    else if (const int* i = std::get_if<int>(&o.value)) b.value = static_cast<int64_t>(*i);
    else if (const auto* a = std::get_if<std::array<char, etr::kMaxOptionValueLength>>(&o.value))
      b.value = std::string(bounded(a->data(), a->size()));
    out.push_back(std::move(b));
  }
  return out;
}

// Compile specs streamrt.executorch writes for its preprocess (the record carries what they
// decided): not the runtime's, and not worth the unknown-spec warning.
bool ahead_of_time_only(const char* key) {
  for (const char* k : {"device", "precision", "weight_streaming", "min_streamable_bytes", "opset_version", "weights",
                        "ptd_name"})
    if (key && std::strcmp(key, k) == 0) return true;
  return false;
}

std::vector<CompileSpec> to_streamrt(etr::ArrayRef<etr::CompileSpec> specs) {
  std::vector<CompileSpec> out;
  for (const etr::CompileSpec& s : specs) {
    if (ahead_of_time_only(s.key)) continue;
    const auto* p = static_cast<const uint8_t*>(s.value.buffer);
    out.push_back({s.key ? std::string(s.key) : std::string(), std::vector<uint8_t>(p, p + (p ? s.value.nbytes : 0))});
  }
  return out;
}

// The engines of one loaded method: its allocator lives as long as the method does.
uint64_t group_key(const etr::BackendInitContext& context) {
  const uint64_t a = reinterpret_cast<uintptr_t>(const_cast<etr::BackendInitContext&>(context).get_runtime_allocator());
  const char* m = context.get_method_name();
  const uint64_t h = std::hash<std::string_view>{}(m ? m : "");
  return a ^ (h + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
}

// The weights section named `key` in the program's named data (a .ptd given to the loader, or
// the .pte's own), read in place: the FreeableBuffer lives as long as the engine.
Result<ExternalWeights> named_weights(const etr::NamedDataMap* map, const std::string& key) {
  if (!map)
    return invalid_program("the program was loaded without named data: load the .ptd saved with the .pte "
                           "(Module(pte, ptd); executorch.runtime load_program(pte, data_path=ptd))");
  etr::Result<etr::FreeableBuffer> got = map->get_data(key);
  if (!got.ok()) {
    char code[16];
    std::snprintf(code, sizeof(code), "0x%x", static_cast<unsigned>(got.error()));
    return invalid_program(std::string("ExecuTorch's named data has no readable entry under this key (error ") + code +
                           "): is the .ptd the one saved with this .pte, and whole?");
  }
  auto buffer = std::make_shared<etr::FreeableBuffer>(std::move(*got));
  const etr::Result<const void*> data = buffer->data_safe();
  if (!data.ok() || (!*data && buffer->size() > 0)) return invalid_program("ExecuTorch's named data entry has no bytes");
  return ExternalWeights{*data, buffer->size(), [buffer] { buffer->Free(); }};
}

}  // namespace

void set_string(etr::BackendOption& o, const std::string& v) {
  std::array<char, etr::kMaxOptionValueLength> a{};
  std::snprintf(a.data(), a.size(), "%s", v.c_str());
  o.value = a;
}

// The calling thread's load scope (begin_load .. end_load): its id and load-time options.
struct ThreadScope {
  uint64_t id = 0;
  std::vector<BackendOption> options;
};
static thread_local ThreadScope t_scope;
static thread_local std::string t_last_error;  // streamrt_executorch_last_error()

// Runs `fn` under streamrt's exception guard; a failure is logged (and kept for
// streamrt_executorch_last_error) and becomes ExecuTorch's code.
template <typename F>
Error checked(const char* what, F&& fn) {
  const Status st = guard(what, std::forward<F>(fn));
  if (st.ok()) return Error::Ok;
  t_last_error = std::string(what) + ": " + st.to_string();
  ET_LOG(Error, "%s", t_last_error.c_str());
  return to_et_error(st);
}

Error to_et_error(const Status& st) {
  switch (st.code()) {
    case StatusCode::kOk: return Error::Ok;
    case StatusCode::kInvalidArgument: return Error::InvalidArgument;
    case StatusCode::kInvalidModel:
    case StatusCode::kInvalidPlan:
    case StatusCode::kInvalidProgram: return Error::InvalidProgram;
    case StatusCode::kIncompatible: return Error::DelegateInvalidCompatibility;
    case StatusCode::kUnsupported: return Error::NotSupported;
    case StatusCode::kNotFound: return Error::NotFound;
    case StatusCode::kInvalidState: return Error::InvalidState;
    case StatusCode::kOutOfMemory: return Error::DelegateMemoryAllocationFailed;
    case StatusCode::kIoError: return Error::AccessFailed;
    default: return Error::Internal;
  }
}

ExecuTorchBackend::ExecuTorchBackend() : core_(std::make_unique<StreamRtCore>()) {}
ExecuTorchBackend::~ExecuTorchBackend() = default;

Status ExecuTorchBackend::init_engine(etr::BackendInitContext& context, etr::FreeableBuffer* processed,
                                      etr::ArrayRef<etr::CompileSpec> compile_specs, EngineHandle** out) const {
  const std::string name = kBackendName;
  // ExecuTorch's own load-time options, else those of the thread's load scope.
  std::vector<BackendOption> options = to_streamrt(context.runtime_specs());
  if (options.empty() && t_scope.id) options = t_scope.options;
  SRT_ASSIGN_OR_RETURN(BudgetLevel load_time,
                       delegate::budget_level_from_options(options, name + " load-time options"));
  const std::vector<CompileSpec> specs = to_streamrt(compile_specs);
  SRT_ASSIGN_OR_RETURN(delegate::BakedSpecs baked, delegate::parse_compile_specs(specs));
  // A malformed baked budget is a malformed program (ExecuTorch's InvalidProgram, as the
  // Torch-TensorRT delegate has it), not a bad argument of the loader.
  const Status baked_budget =
      delegate::parse_budget_level(baked.budget, delegate::BudgetRequest::Source::kCompileTime, name + " compile specs")
          .status();
  if (!baked_budget.ok()) return invalid_program(baked_budget.message());
  const etr::Result<const void*> data = processed ? processed->data_safe() : etr::Result<const void*>(Error::NotFound);
  if (!data.ok() || !*data) return invalid_program(name + ": the delegate has no processed blob (engine record)");
  delegate::InitRequest req;
  req.record = {static_cast<const uint8_t*>(*data), processed->size()};
  req.release_record = [processed] { processed->Free(); };
  req.named_data = [map = context.get_named_data_map()](const std::string& key) { return named_weights(map, key); };
  req.load_time = std::move(load_time);
  req.compile_time = std::move(baked.budget);
  req.engine_index = baked.engine_index;
  req.engine_count = baked.engine_count;
  req.group = group_key(context);
  SRT_ASSIGN_OR_RETURN(*out, core_->init(std::move(req)));
  std::lock_guard<std::mutex> lock(mu_);
  loaded_.push_back(*out);
  if (t_scope.id) scope_of_[*out] = t_scope.id;
  return ok_status();
}

etr::Result<etr::DelegateHandle*> ExecuTorchBackend::init(etr::BackendInitContext& context,
                                                         etr::FreeableBuffer* processed,
                                                         etr::ArrayRef<etr::CompileSpec> compile_specs) const {
  EngineHandle* h = nullptr;
  const Error e = checked("StreamRTBackend init", [&] { return init_engine(context, processed, compile_specs, &h); });
  if (e != Error::Ok) return e;
  return static_cast<etr::DelegateHandle*>(h);
}

Status ExecuTorchBackend::run(EngineHandle* h, etr::Span<etr::EValue*> args) const {
  const EngineRecord& rec = core_->record(h);
  const size_t n_in = rec.inputs.size(), n_out = rec.outputs.size();
  const std::string where = "engine '" + rec.engine_name + "'";
  if (args.size() != n_in + n_out)
    return invalid_argument(where + " takes " + std::to_string(n_in) + " inputs and " + std::to_string(n_out) +
                            " outputs, the delegate call passes " + std::to_string(args.size()) + " values");
  std::vector<Tensor> inputs, outputs(n_out);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& binding = i < n_in ? rec.inputs[i] : rec.outputs[i - n_in];
    if (!args[i] || !args[i]->isTensor())
      return invalid_argument(where + " binding '" + binding + "' is not a tensor in the delegate call");
    if (i >= n_in) continue;
    SRT_ASSIGN_OR_RETURN(Tensor t, input_tensor(args[i]->toTensor(), where + " input '" + binding + "'"));
    inputs.push_back(std::move(t));
  }
  SRT_RETURN_IF_ERROR(core_->execute(h, inputs, outputs));
  for (size_t j = 0; j < n_out; ++j)
    SRT_RETURN_IF_ERROR(write_output(outputs[j], args[n_in + j]->toTensor(), where + " output '" + rec.outputs[j] + "'"));
  return ok_status();
}

Error ExecuTorchBackend::execute(etr::BackendExecutionContext&, etr::DelegateHandle* handle,
                                 etr::Span<etr::EValue*> args) const {
  return checked("StreamRTBackend execute", [&] { return run(static_cast<EngineHandle*>(handle), args); });
}

void ExecuTorchBackend::destroy(etr::DelegateHandle* handle) const {
  auto* h = static_cast<EngineHandle*>(handle);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(loaded_.begin(), loaded_.end(), h);
    if (!h || it == loaded_.end()) {  // never ours, or destroyed before: freeing it again would be a double free
      ET_LOG(Error, "StreamRTBackend destroy: unknown or already destroyed handle %p ignored", handle);
      return;
    }
    loaded_.erase(it);
    scope_of_.erase(h);
    ++destroyed_;
  }
  core_->destroy(h);
}

uint64_t ExecuTorchBackend::begin_load(std::vector<BackendOption> options) {
  std::lock_guard<std::mutex> lock(mu_);
  t_scope = {next_scope_++, std::move(options)};
  return t_scope.id;
}

void ExecuTorchBackend::end_load(uint64_t scope) {
  if (t_scope.id == scope) t_scope = {};
}

std::vector<EngineHandle*> ExecuTorchBackend::in_scope(uint64_t scope) const {
  if (scope == 0) return loaded_;
  std::vector<EngineHandle*> out;
  for (EngineHandle* h : loaded_)
    if (auto it = scope_of_.find(h); it != scope_of_.end() && it->second == scope) out.push_back(h);
  return out;
}

Status ExecuTorchBackend::set_budget(uint64_t scope, std::span<const BackendOption> options) {
  const std::string name = kBackendName;
  SRT_ASSIGN_OR_RETURN(BudgetLevel level, delegate::budget_level_from_options(options, name + " set_option"));
  // Held throughout, so that no engine is destroyed while its group changes.
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<EngineHandle*> handles = in_scope(scope);
  if (handles.empty())
    return invalid_state(name + " set_option: no StreamRT engine is loaded" +
                         (scope ? " in load scope " + std::to_string(scope) : std::string()));
  return core_->set_budget(handles, level);
}

Error ExecuTorchBackend::set_option(etr::BackendOptionContext&, const etr::Span<etr::BackendOption>& options) {
  return checked("StreamRTBackend set_option", [&] {
    return set_budget(0, to_streamrt(etr::Span<const etr::BackendOption>(options.data(), options.size())));
  });
}

Status ExecuTorchBackend::report(uint64_t scope, etr::Span<etr::BackendOption>& options) const {
  std::vector<delegate::EngineBudgetStatus> engines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    engines = core_->budgets(in_scope(scope));
  }
  for (etr::BackendOption& o : options) {
    const std::string_view key = bounded(o.key, etr::kMaxOptionKeyLength);
    if (key == "num_engines") {
      o.value = static_cast<int>(engines.size());
      continue;
    }
    const bool budget = key.starts_with(delegate::kBudgetKey);
    const std::string_view base = budget ? delegate::kBudgetKey : "streamable_weights_size";
    auto value = [&](const delegate::EngineBudgetStatus& e) { return budget ? e.budget : e.streamable_size; };
    if (key == base) {
      uint64_t total = 0;
      for (const auto& e : engines) total += value(e);
      set_string(o, std::to_string(total));
      continue;
    }
    size_t i = 0;
    const char* first = key.data() + base.size() + 1;
    const bool indexed = key.size() > base.size() + 1 && key.starts_with(base) && key[base.size()] == '.';
    auto [end, ec] = indexed ? std::from_chars(first, key.data() + key.size(), i) : std::from_chars_result{first, std::errc::invalid_argument};
    if (!indexed || ec != std::errc() || end != key.data() + key.size() || i >= engines.size())
      return not_found(std::string(kBackendName) + " get_option: no option '" + std::string(key) + "' (" +
                       std::to_string(engines.size()) + " engines loaded)");
    set_string(o, std::to_string(value(engines[i])));
  }
  return ok_status();
}

Error ExecuTorchBackend::get_option(etr::BackendOptionContext&, etr::Span<etr::BackendOption>& options) {
  return checked("StreamRTBackend get_option", [&] { return report(0, options); });
}

size_t ExecuTorchBackend::loaded_engines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_.size();
}

uint64_t ExecuTorchBackend::destroyed_engines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return destroyed_;
}

Status ExecuTorchBackend::reset_core(CoreOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded_.empty())
    return invalid_state(std::string(kBackendName) + ": " + std::to_string(loaded_.size()) + " engines are loaded");
  core_ = std::make_unique<StreamRtCore>(std::move(options));
  return ok_status();
}

namespace {
EngineRecord record_of(const plan::PlanData& p) {
  EngineRecord rec;
  rec.engine_name = p.name;
  rec.streamrt_version = STREAMRT_VERSION;
  rec.device = p.device;
  for (const auto& i : p.inputs) rec.inputs.push_back(i.name);
  for (const auto& o : p.outputs) rec.outputs.push_back(o.name);
  for (const auto& w : p.weights) rec.streamable_size += w.streamable ? w.size : 0;
  return rec;
}
}  // namespace

Status engine_record_of_plan(std::span<const uint8_t> plan, std::vector<uint8_t>& out) {
  SRT_ASSIGN_OR_RETURN(plan::LoadedPlan loaded, plan::read_plan_bytes(plan.data(), plan.size(), nullptr));
  out = delegate::serialize_engine_record(record_of(loaded.data), plan);
  return ok_status();
}

Status engine_record_apart(const std::string& plan_path, const std::string& weights_key, std::vector<uint8_t>& out,
                           plan::PlanParts& parts) {
  // Mapped and verified in full (checksums included) before any of it goes into a program.
  SRT_ASSIGN_OR_RETURN(plan::LoadedPlan loaded, plan::read_plan(plan_path));
  SRT_ASSIGN_OR_RETURN(parts, plan::plan_parts(loaded.base, loaded.file_size));
  EngineRecord rec = record_of(loaded.data);
  if (parts.weights_size == 0) {  // nothing to hold apart
    out = delegate::serialize_engine_record(rec, {loaded.base, loaded.file_size});
    return ok_status();
  }
  if (weights_key.empty()) return invalid_argument("engine record: an empty named-data key for the weights");
  rec.weights_key = weights_key;
  out = delegate::serialize_engine_record(rec, {loaded.base, parts.metadata_end});
  return ok_status();
}

ExecuTorchBackend& registered_backend() {
  static ExecuTorchBackend backend;
  return backend;
}

namespace {
// Registered when the library is loaded (linked, or dlopen'ed with RTLD_GLOBAL).
const bool registered = [] {
  const Error e = etr::register_backend({kBackendName, &registered_backend()});
  if (e != Error::Ok) ET_LOG(Error, "StreamRTBackend: registering with ExecuTorch failed (error 0x%x)", static_cast<int>(e));
  return e == Error::Ok;
}();
}  // namespace

}  // namespace streamrt::et

namespace {

namespace etr = ::executorch::runtime;
using streamrt::et::registered_backend;

etr::BackendOption string_option(const char* key, const char* value) {
  etr::BackendOption o{};
  std::snprintf(o.key, sizeof(o.key), "%s", key);
  if (value) streamrt::et::set_string(o, value);
  return o;
}

// get_option's value as a NUL-terminated string (an int as decimal).
int write_value(const etr::BackendOption& o, char* out, size_t size) {
  if (const int* i = std::get_if<int>(&o.value)) std::snprintf(out, size, "%d", *i);
  else if (const auto* a = std::get_if<std::array<char, etr::kMaxOptionValueLength>>(&o.value)) std::snprintf(out, size, "%s", a->data());
  else return static_cast<int>(etr::Error::InvalidType);
  return 0;
}

int c_error(const char* what, const std::string& message) {
  return static_cast<int>(streamrt::et::checked(what, [&] { return streamrt::invalid_argument(message); }));
}

}  // namespace

extern "C" int streamrt_executorch_set_option(const char* key, const char* value) {
  if (!key || !value) return static_cast<int>(etr::Error::InvalidArgument);
  etr::BackendOption o = string_option(key, value);
  return static_cast<int>(etr::set_option(streamrt::et::kBackendName, etr::Span<etr::BackendOption>(&o, 1)));
}

extern "C" int streamrt_executorch_get_option(const char* key, char* out, size_t size) {
  if (!key || !out || size == 0) return static_cast<int>(etr::Error::InvalidArgument);
  etr::BackendOption o = string_option(key, nullptr);
  const etr::Error e = etr::get_option(streamrt::et::kBackendName, etr::Span<etr::BackendOption>(&o, 1));
  return e != etr::Error::Ok ? static_cast<int>(e) : write_value(o, out, size);
}

extern "C" const char* streamrt_executorch_last_error(void) { return streamrt::et::t_last_error.c_str(); }

extern "C" int streamrt_executorch_begin_load(const char* const* keys, const char* const* values, size_t count,
                                             uint64_t* scope) {
  streamrt::et::t_last_error.clear();
  if (!scope || (count && (!keys || !values))) return c_error("streamrt_executorch_begin_load", "null argument");
  std::vector<streamrt::BackendOption> options;
  for (size_t i = 0; i < count; ++i) {
    if (!keys[i] || !values[i]) return c_error("streamrt_executorch_begin_load", "null key or value");
    options.push_back({keys[i], std::string(values[i])});
  }
  // Malformed options fail here, naming key and value, rather than at the first init.
  const etr::Error e = streamrt::et::checked("streamrt.executorch load options", [&] {
    return streamrt::delegate::budget_level_from_options(options, "streamrt.executorch.load").status();
  });
  if (e != etr::Error::Ok) return static_cast<int>(e);
  *scope = registered_backend().begin_load(std::move(options));
  return 0;
}

extern "C" int streamrt_executorch_end_load(uint64_t scope) {
  registered_backend().end_load(scope);
  return 0;
}

extern "C" int streamrt_executorch_set_scope_option(uint64_t scope, const char* key, const char* value) {
  if (!key || !value) return c_error("StreamRTBackend set_option", "null key or value");
  const streamrt::BackendOption o{key, std::string(value)};
  return static_cast<int>(streamrt::et::checked("StreamRTBackend set_option", [&] {
    return registered_backend().set_budget(scope, {&o, 1});
  }));
}

extern "C" int streamrt_executorch_get_scope_option(uint64_t scope, const char* key, char* out, size_t size) {
  if (!key || !out || size == 0) return c_error("StreamRTBackend get_option", "null key or output");
  etr::BackendOption o = string_option(key, nullptr);
  etr::Span<etr::BackendOption> span(&o, 1);
  const etr::Error e =
      streamrt::et::checked("StreamRTBackend get_option", [&] { return registered_backend().report(scope, span); });
  return e != etr::Error::Ok ? static_cast<int>(e) : write_value(o, out, size);
}

extern "C" int streamrt_executorch_check_budget(const char* value) {
  if (!value) return c_error("weight_streaming_budget", "null value");
  return static_cast<int>(streamrt::et::checked("weight_streaming_budget", [&]() -> streamrt::Status {
    SRT_ASSIGN_OR_RETURN(streamrt::BudgetSpec spec, streamrt::parse_budget(value));
    if (spec.kind == streamrt::BudgetSpec::Kind::kUnset) return streamrt::invalid_argument("an empty budget");
    return streamrt::ok_status();
  }));
}

extern "C" int streamrt_executorch_engine_record(const uint8_t* plan, size_t plan_size, uint8_t* out, size_t size,
                                                size_t* needed) {
  if (!plan || !needed) return c_error("streamrt_executorch_engine_record", "null argument");
  return static_cast<int>(streamrt::et::checked("engine record", [&]() -> streamrt::Status {
    std::vector<uint8_t> record;
    SRT_RETURN_IF_ERROR(streamrt::et::engine_record_of_plan({plan, plan_size}, record));
    *needed = record.size();
    if (out && size >= record.size()) std::memcpy(out, record.data(), record.size());
    return streamrt::ok_status();
  }));
}

extern "C" int streamrt_executorch_engine_record_apart(const char* plan_path, const char* weights_key, uint8_t* out,
                                                      size_t size, size_t* needed, uint64_t* weights_offset,
                                                      uint64_t* weights_size) {
  if (!plan_path || !weights_key || !needed || !weights_offset || !weights_size)
    return c_error("streamrt_executorch_engine_record_apart", "null argument");
  return static_cast<int>(streamrt::et::checked("engine record", [&]() -> streamrt::Status {
    std::vector<uint8_t> record;
    streamrt::plan::PlanParts parts;
    SRT_RETURN_IF_ERROR(streamrt::et::engine_record_apart(plan_path, weights_key, record, parts));
    *needed = record.size();
    *weights_offset = parts.weights_offset;
    *weights_size = parts.weights_size;
    if (out && size >= record.size()) std::memcpy(out, record.data(), record.size());
    return streamrt::ok_status();
  }));
}

extern "C" int streamrt_executorch_check_ptd(const char* path) {
  if (!path) return c_error("streamrt_executorch_check_ptd", "null path");
  return static_cast<int>(streamrt::et::checked("named data file", [&] { return streamrt::et::check_ptd_file(path); }));
}
