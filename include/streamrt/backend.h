// The delegate backend interface (ExecuTorch's runtime/backend, with streamrt's Status).
// A backend turns the processed blob of a lowered subgraph into a handle at init, runs it at
// execute, and releases it at destroy. Backends register by name at static-init time:
//
//   namespace { MyBackend backend; }
//   STREAMRT_REGISTER_BACKEND(my_backend, "MyBackend", &backend);
//
// A program that names a backend nobody registered fails to load with kNotFound naming it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "streamrt/program.h"

namespace streamrt {

// What init returns and execute / destroy get back; the backend owns what it points to.
using DelegateHandle = void;

// A key -> bytes pair baked into the program at compile time (ExecuTorch's CompileSpec).
struct CompileSpec {
  std::string key;
  std::vector<uint8_t> value;
  std::string_view value_string() const {
    return {reinterpret_cast<const char*>(value.data()), value.size()};
  }
};

// Bytes a backend may release once it no longer needs them (e.g. after deserializing).
class FreeableBuffer {
 public:
  FreeableBuffer() = default;
  FreeableBuffer(const void* data, size_t size, std::function<void()> release)
      : data_(data), size_(size), release_(std::move(release)) {}
  FreeableBuffer(FreeableBuffer&& other) noexcept { *this = std::move(other); }
  FreeableBuffer& operator=(FreeableBuffer&& other) noexcept;
  FreeableBuffer(const FreeableBuffer&) = delete;
  FreeableBuffer& operator=(const FreeableBuffer&) = delete;
  ~FreeableBuffer() { free(); }

  const void* data() const { return data_; }
  size_t size() const { return size_; }
  bool freed() const { return data_ == nullptr; }
  // Releases the bytes (idempotent); data() is nullptr and size() 0 afterwards.
  void free();

 private:
  const void* data_ = nullptr;
  size_t size_ = 0;
  std::function<void()> release_;
};

// What init may ask of the runtime: the load-time options the caller passed for this backend.
class BackendInitContext {
 public:
  BackendInitContext(std::string backend, std::string method, const BackendOptions* runtime_specs,
                     uint64_t load_id)
      : backend_(std::move(backend)), method_(std::move(method)), specs_(runtime_specs), load_id_(load_id) {}

  // The load-time option `key` (Module::load's LoadBackendOptionsMap, this backend's entry):
  // kNotFound when absent, kInvalidArgument when it holds another type than T.
  // T is bool, int64_t or std::string.
  template <typename T>
  Result<T> get_runtime_spec(std::string_view key) const;
  // Every load-time option given for this backend.
  std::span<const BackendOption> runtime_specs() const;
  const std::string& backend_name() const { return backend_; }
  const std::string& method_name() const { return method_; }
  // Equal for every delegate inited by one load of one method, different across loads: lets
  // a backend treat the delegates of one program instance together.
  uint64_t load_id() const { return load_id_; }

 private:
  std::string backend_, method_;
  const BackendOptions* specs_;
  uint64_t load_id_;
};

class BackendExecutionContext {
 public:
  explicit BackendExecutionContext(std::string method) : method_(std::move(method)) {}
  const std::string& method_name() const { return method_; }

 private:
  std::string method_;
};

// set_option / get_option: the handles of the caller's loaded delegates of this backend.
class BackendOptionContext {
 public:
  explicit BackendOptionContext(std::vector<DelegateHandle*> handles) : handles_(std::move(handles)) {}
  std::span<DelegateHandle* const> handles() const { return handles_; }

 private:
  std::vector<DelegateHandle*> handles_;
};

class BackendInterface {
 public:
  virtual ~BackendInterface() = default;
  // False when the backend cannot run here (then loading a program that uses it fails).
  virtual bool is_available() const = 0;
  // Turns `processed` (the delegate's blob) into a handle. The backend may free `processed`
  // once it no longer needs it; the runtime frees it after init in any case.
  virtual Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                                       std::span<const CompileSpec> compile_specs) = 0;
  // Runs the delegate: `args` are the DelegateCall's inputs then its outputs. An output holds
  // a tensor allocated with its declared dims when those are static, else none; the backend
  // may replace it.
  virtual Status execute(BackendExecutionContext& context, DelegateHandle* handle,
                         std::span<EValue*> args) = 0;
  // Called exactly once for every handle a successful init returned.
  virtual void destroy(DelegateHandle* handle) {}
  // Options after load (e.g. a new weight-streaming budget); kUnsupported by default.
  virtual Status set_option(BackendOptionContext& context, std::span<const BackendOption> options);
  // Fills options[i].value for each key the backend knows; kUnsupported by default.
  virtual Status get_option(BackendOptionContext& context, std::span<BackendOption> options);
};

// Registers `backend` (not owned; must outlive its use) under `name`. kInvalidArgument for an
// empty name, a null backend, or a name already registered.
Status register_backend(const std::string& name, BackendInterface* backend);
// nullptr when no backend of that name is registered.
BackendInterface* get_backend(std::string_view name);
std::vector<std::string> registered_backends();
// Problems of static registration (duplicate names); empty when healthy.
std::vector<std::string> backend_registry_errors();

struct BackendRegistrar {
  BackendRegistrar(const char* name, BackendInterface* backend);
};

template <typename T>
Result<T> BackendInitContext::get_runtime_spec(std::string_view key) const {
  static_assert(std::is_same_v<T, bool> || std::is_same_v<T, int64_t> || std::is_same_v<T, std::string>,
                "runtime specs are bool, int64_t or std::string");
  const BackendOption* o = specs_ ? specs_->find(key) : nullptr;
  if (!o) return not_found(backend_ + ": no load-time option '" + std::string(key) + "'");
  if (const T* v = std::get_if<T>(&o->value)) return *v;
  return invalid_argument(backend_ + ": load-time option '" + std::string(key) + "' is a " +
                          backend_option_type_name(o->value) + ", expected a " +
                          backend_option_type_name(BackendOptionValue(T{})));
}

}  // namespace streamrt

#define STREAMRT_REGISTER_BACKEND(id, name, backend_ptr) \
  static ::streamrt::BackendRegistrar _srt_backend_registrar_##id(name, backend_ptr)
