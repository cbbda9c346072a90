// The delegate host runtime, in the style of ExecuTorch: a program file (.pte) holds methods
// whose instructions are portable CPU kernel calls or calls into delegates (lowered subgraphs
// that a backend, e.g. StreamRTBackend, runs). See include/streamrt/backend.h for backends and
// src/program/program_format.h for the file format.
//
//   streamrt::BackendOptions srt;
//   srt.set_option("weight_streaming_budget", "8GiB");
//   streamrt::LoadBackendOptionsMap options;
//   options.set_options("StreamRTBackend", srt);
//   streamrt::Module m("model.pte");
//   if (Status st = m.load(options); !st.ok()) ...;
//   auto outputs = m.forward({streamrt::EValue(input_tensor)});
//
// Threading: forward / execute may run on several threads at once (each call has its own
// values); set_backend_option may run alongside them (the backend waits for executions in
// flight). load must not overlap any other call on the same Module.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "streamrt/status.h"
#include "streamrt/tensor.h"  // the host tensor type EValues hold

namespace streamrt {

// A value of a method: a tensor, a scalar, or a list of them (ExecuTorch's EValue).
class EValue {
 public:
  // Numbering is part of the program format: never renumber, only append.
  enum class Tag : uint8_t {
    kNone = 0, kTensor, kInt, kDouble, kBool, kIntList, kDoubleList, kBoolList, kTensorList,
  };

  EValue() = default;
  EValue(Tensor t) : v_(std::move(t)) {}  // NOLINT: implicit by design
  EValue(int64_t i) : v_(i) {}            // NOLINT
  EValue(int i) : v_(int64_t{i}) {}       // NOLINT
  EValue(double d) : v_(d) {}             // NOLINT
  EValue(bool b) : v_(b) {}               // NOLINT
  EValue(std::vector<int64_t> l) : v_(std::move(l)) {}  // NOLINT
  EValue(std::vector<double> l) : v_(std::move(l)) {}   // NOLINT
  EValue(std::vector<bool> l) : v_(std::move(l)) {}     // NOLINT
  EValue(std::vector<Tensor> l) : v_(std::move(l)) {}   // NOLINT

  Tag tag() const { return static_cast<Tag>(v_.index()); }
  bool is_none() const { return tag() == Tag::kNone; }
  bool is_tensor() const { return tag() == Tag::kTensor; }
  // Typed access; nullptr when the value holds another kind.
  const Tensor* tensor() const { return std::get_if<Tensor>(&v_); }
  Tensor* tensor() { return std::get_if<Tensor>(&v_); }
  const int64_t* to_int() const { return std::get_if<int64_t>(&v_); }
  const double* to_double() const { return std::get_if<double>(&v_); }
  const bool* to_bool() const { return std::get_if<bool>(&v_); }
  const std::vector<int64_t>* int_list() const { return std::get_if<std::vector<int64_t>>(&v_); }
  const std::vector<double>* double_list() const { return std::get_if<std::vector<double>>(&v_); }
  const std::vector<bool>* bool_list() const { return std::get_if<std::vector<bool>>(&v_); }
  const std::vector<Tensor>* tensor_list() const { return std::get_if<std::vector<Tensor>>(&v_); }

 private:
  std::variant<std::monostate, Tensor, int64_t, double, bool, std::vector<int64_t>, std::vector<double>,
               std::vector<bool>, std::vector<Tensor>>
      v_;
};

// "none", "tensor", "int", ... ; "invalid" for a number outside the enum.
const char* evalue_tag_name(EValue::Tag tag);

// ---- backend options --------------------------------------------------------------------

// An option value: a flag, a signed integer or a string (byte budgets are strings: "8GiB").
using BackendOptionValue = std::variant<bool, int64_t, std::string>;
struct BackendOption {
  std::string key;
  BackendOptionValue value;
};
// "bool", "int" or "string".
const char* backend_option_type_name(const BackendOptionValue& v);

// Options for one backend; setting a key again replaces its value.
class BackendOptions {
 public:
  BackendOptions& set_option(std::string key, BackendOptionValue value);
  BackendOptions& set_option(std::string key, bool v) { return set_option(std::move(key), BackendOptionValue(v)); }
  BackendOptions& set_option(std::string key, int64_t v) { return set_option(std::move(key), BackendOptionValue(v)); }
  BackendOptions& set_option(std::string key, int v) { return set_option(std::move(key), BackendOptionValue(int64_t{v})); }
  BackendOptions& set_option(std::string key, std::string v) {
    return set_option(std::move(key), BackendOptionValue(std::move(v)));
  }
  BackendOptions& set_option(std::string key, const char* v) { return set_option(std::move(key), std::string(v)); }
  const BackendOption* find(std::string_view key) const;
  std::span<const BackendOption> view() const { return options_; }
  bool empty() const { return options_.empty(); }

 private:
  std::vector<BackendOption> options_;
};

// Load-time options per backend name, handed to each backend's init through
// BackendInitContext::get_runtime_spec. Setting a backend again replaces its options.
class LoadBackendOptionsMap {
 public:
  // kInvalidArgument for an empty backend name.
  Status set_options(const std::string& backend, BackendOptions options);
  // nullptr when no options were set for `backend`.
  const BackendOptions* get(std::string_view backend) const;
  std::vector<std::string> backends() const;
  size_t size() const { return map_.size(); }

 private:
  std::map<std::string, BackendOptions, std::less<>> map_;
};

// ---- program, method, module --------------------------------------------------------------

struct LoadedProgram;  // src/program/program_format.h
class Method;

// A verified program file. Immutable; shared by the methods loaded from it.
class Program {
 public:
  // Maps and fully verifies a .pte file: kIoError (file), kInvalidProgram (malformed, with a
  // message naming the field), kIncompatible (another format version).
  static Result<std::shared_ptr<const Program>> load(const std::string& path);
  // Same for bytes held in memory (copied).
  static Result<std::shared_ptr<const Program>> load_bytes(std::span<const uint8_t> bytes);
  ~Program();

  std::vector<std::string> method_names() const;
  // Resolves kernels and backends and inits every delegate of method `name` with `options`.
  // kNotFound naming a missing method, kernel or backend; a failing init's Status (with
  // context); delegates inited before a failure are destroyed.
  Result<std::unique_ptr<Method>> load_method(const std::string& name,
                                              const LoadBackendOptionsMap& options = {}) const;
  const LoadedProgram& loaded() const { return *loaded_; }

 private:
  explicit Program(std::shared_ptr<const LoadedProgram> loaded);
  std::shared_ptr<const LoadedProgram> loaded_;
};

struct MethodState;

// A loaded method: its delegates are initialized; destroyed (each exactly once) with it.
class Method {
 public:
  ~Method();
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;

  const std::string& name() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  // Runs the instructions on `inputs` (one per method input, checked against the declared
  // kind, dtype and dims) and returns the outputs. Safe to call from several threads.
  Result<std::vector<EValue>> execute(std::vector<EValue> inputs) const;
  // Calls backend `backend`'s set_option / get_option with this method's delegates of it;
  // kNotFound when the method has none.
  Status set_backend_option(const std::string& backend, std::span<const BackendOption> options) const;
  Status get_backend_option(const std::string& backend, std::span<BackendOption> options) const;
  // Names of the backends this method's delegates use (each once, in program order).
  std::vector<std::string> backends() const;

 private:
  friend class Program;
  friend class Module;
  explicit Method(std::unique_ptr<MethodState> state);
  std::unique_ptr<MethodState> state_;
};

// Convenience owner of a program and its methods (ExecuTorch's extension::Module).
class Module {
 public:
  explicit Module(std::string path);
  ~Module();

  // Loads the program and every method with `options` (copied into the Module). A failed
  // load keeps what was loaded before, and the previous options.
  Status load(const LoadBackendOptionsMap& options = {});
  bool is_loaded() const;
  // The options of the last successful load.
  const LoadBackendOptionsMap& backend_options() const { return options_; }
  std::vector<std::string> method_names() const;
  // execute("forward", inputs). kInvalidState before a successful load.
  Result<std::vector<EValue>> forward(std::vector<EValue> inputs) const;
  Result<std::vector<EValue>> execute(const std::string& method, std::vector<EValue> inputs) const;
  // Changes options of a loaded backend live, in every method that uses it (through the
  // backend's set_option); kNotFound when no method uses `backend`.
  Status set_backend_option(const std::string& backend, const BackendOptions& options);
  // Fills `options[i].value` for each requested key (the backend sets what it reports), over
  // the delegates of `backend` in every method.
  Status get_backend_option(const std::string& backend, std::span<BackendOption> options) const;
  std::shared_ptr<const Program> program() const;

 private:
  std::vector<const MethodState*> method_states() const;

  std::string path_;
  LoadBackendOptionsMap options_;
  std::shared_ptr<const Program> program_;
  std::map<std::string, std::unique_ptr<Method>, std::less<>> methods_;
  mutable std::shared_mutex mutex_;  // load: exclusive; the rest: shared
};

}  // namespace streamrt
