// The backend registry and the small value types of include/streamrt/backend.h and program.h
// (EValue tag names, BackendOptions, LoadBackendOptionsMap, FreeableBuffer).
#include <algorithm>
#include <map>
#include <mutex>

#include "streamrt/backend.h"

namespace streamrt {

const char* evalue_tag_name(EValue::Tag tag) {
  static const char* const kNames[] = {"none", "tensor", "int", "double", "bool",
                                       "int list", "double list", "bool list", "tensor list"};
  const auto i = static_cast<size_t>(tag);
  return i < std::size(kNames) ? kNames[i] : "invalid";
}

const char* backend_option_type_name(const BackendOptionValue& v) {
  static const char* const kNames[] = {"bool", "int", "string"};
  return kNames[v.index()];
}

BackendOptions& BackendOptions::set_option(std::string key, BackendOptionValue value) {
  auto it = std::find_if(options_.begin(), options_.end(), [&](const BackendOption& o) { return o.key == key; });
  if (it != options_.end()) it->value = std::move(value);
  else options_.push_back({std::move(key), std::move(value)});
  return *this;
}

const BackendOption* BackendOptions::find(std::string_view key) const {
  for (const BackendOption& o : options_)
    if (o.key == key) return &o;
  return nullptr;
}

Status LoadBackendOptionsMap::set_options(const std::string& backend, BackendOptions options) {
  if (backend.empty()) return invalid_argument("LoadBackendOptionsMap: empty backend name");
  map_[backend] = std::move(options);
  return ok_status();
}

const BackendOptions* LoadBackendOptionsMap::get(std::string_view backend) const {
  auto it = map_.find(backend);
  return it == map_.end() ? nullptr : &it->second;
}

std::vector<std::string> LoadBackendOptionsMap::backends() const {
  std::vector<std::string> out;
  for (const auto& [name, options] : map_) out.push_back(name);
  return out;
}

FreeableBuffer& FreeableBuffer::operator=(FreeableBuffer&& other) noexcept {
  if (this != &other) {
    free();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    release_ = std::exchange(other.release_, nullptr);
  }
  return *this;
}

void FreeableBuffer::free() {
  data_ = nullptr;
  size_ = 0;
  if (auto release = std::exchange(release_, nullptr)) release();
}

std::span<const BackendOption> BackendInitContext::runtime_specs() const {
  return specs_ ? specs_->view() : std::span<const BackendOption>{};
}

Status BackendInterface::set_option(BackendOptionContext&, std::span<const BackendOption>) {
  return unsupported("this backend has no options to set after load");
}

Status BackendInterface::get_option(BackendOptionContext&, std::span<BackendOption>) {
  return unsupported("this backend reports no options");
}

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, BackendInterface*, std::less<>> backends;
  std::vector<std::string> errors;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: used during static init and exit
  return *r;
}

}  // namespace

Status register_backend(const std::string& name, BackendInterface* backend) {
  if (name.empty()) return invalid_argument("register_backend: empty backend name");
  if (!backend) return invalid_argument("register_backend: null backend for '" + name + "'");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.backends.emplace(name, backend).second)
    return invalid_argument("register_backend: a backend named '" + name + "' is already registered");
  return ok_status();
}

BackendInterface* get_backend(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.backends.find(name);
  return it == r.backends.end() ? nullptr : it->second;
}

std::vector<std::string> registered_backends() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, b] : r.backends) out.push_back(name);
  return out;
}

std::vector<std::string> backend_registry_errors() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.errors;
}

BackendRegistrar::BackendRegistrar(const char* name, BackendInterface* backend) {
  Status st = register_backend(name ? name : "", backend);
  if (st.ok()) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.errors.push_back(st.message());
}

}  // namespace streamrt
