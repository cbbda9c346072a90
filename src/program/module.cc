// Module: a program file plus its loaded methods, and backend options across them.
#include "program/method_state.h"

#include "core/guard.h"

namespace streamrt {

namespace {

// The backend of `name` that `methods` use, and the handles of its delegates in them.
Result<BackendInterface*> backend_handles(const std::vector<const MethodState*>& methods, const std::string& name,
                                          std::vector<DelegateHandle*>* handles) {
  BackendInterface* backend = nullptr;
  for (const MethodState* m : methods)
    for (const MethodState::Delegate& d : m->delegates)
      if (d.backend_name == name) {
        backend = d.backend;
        handles->push_back(d.handle);
      }
  if (!backend) return not_found("no loaded method has a delegate of backend '" + name + "'");
  return backend;
}

}  // namespace

Status MethodState::set_option(std::vector<const MethodState*> methods, const std::string& backend,
                               std::span<const BackendOption> options) {
  std::vector<DelegateHandle*> handles;
  SRT_ASSIGN_OR_RETURN(BackendInterface * b, backend_handles(methods, backend, &handles));
  BackendOptionContext ctx(std::move(handles));
  return b->set_option(ctx, options).with_context(backend + ": set_option");
}

Status MethodState::get_option(std::vector<const MethodState*> methods, const std::string& backend,
                               std::span<BackendOption> options) {
  std::vector<DelegateHandle*> handles;
  SRT_ASSIGN_OR_RETURN(BackendInterface * b, backend_handles(methods, backend, &handles));
  BackendOptionContext ctx(std::move(handles));
  return b->get_option(ctx, options).with_context(backend + ": get_option");
}

Module::Module(std::string path) : path_(std::move(path)) {}
Module::~Module() = default;

Status Module::load(const LoadBackendOptionsMap& options) {
  return guard([&] { return "Module::load '" + path_ + "'"; }, [&]() -> Status {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    // The previous methods go first: their delegates may hold device memory the new ones need.
    methods_.clear();
    if (!program_) {
      auto p = Program::load(path_);
      if (!p.ok()) return p.status();
      program_ = std::move(p).value();
    }
    std::map<std::string, std::unique_ptr<Method>, std::less<>> loaded;
    for (const std::string& name : program_->method_names()) {
      auto m = program_->load_method(name, options);
      if (!m.ok()) return m.status();
      loaded.emplace(name, std::move(m).value());
    }
    methods_ = std::move(loaded);
    options_ = options;
    return ok_status();
  });
}

bool Module::is_loaded() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return !methods_.empty();
}

std::vector<std::string> Module::method_names() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return program_ ? program_->method_names() : std::vector<std::string>{};
}

std::shared_ptr<const Program> Module::program() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return program_;
}

Result<std::vector<EValue>> Module::forward(std::vector<EValue> inputs) const {
  return execute("forward", std::move(inputs));
}

Result<std::vector<EValue>> Module::execute(const std::string& method, std::vector<EValue> inputs) const {
  return guard([&] { return "Module::execute '" + method + "'"; }, [&]() -> Result<std::vector<EValue>> {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    if (methods_.empty()) return invalid_state("module '" + path_ + "' is not loaded (call load() first)");
    auto it = methods_.find(method);
    if (it == methods_.end()) return not_found("module '" + path_ + "' has no method '" + method + "'");
    return it->second->execute(std::move(inputs));
  });
}

std::vector<const MethodState*> Module::method_states() const {
  std::vector<const MethodState*> out;
  for (const auto& [name, m] : methods_) out.push_back(m->state_.get());
  return out;
}

Status Module::set_backend_option(const std::string& backend, const BackendOptions& options) {
  return guard([&] { return "Module::set_backend_option '" + backend + "'"; }, [&]() -> Status {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    if (methods_.empty()) return invalid_state("module '" + path_ + "' is not loaded (call load() first)");
    return MethodState::set_option(method_states(), backend, options.view());
  });
}

Status Module::get_backend_option(const std::string& backend, std::span<BackendOption> options) const {
  return guard([&] { return "Module::get_backend_option '" + backend + "'"; }, [&]() -> Status {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    if (methods_.empty()) return invalid_state("module '" + path_ + "' is not loaded (call load() first)");
    return MethodState::get_option(method_states(), backend, options);
  });
}

}  // namespace streamrt
