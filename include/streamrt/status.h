// Status and Result<T>: the error model of every streamrt boundary.
// No exception crosses the public API; a failing call returns a Status whose
// message says what was wrong and where. Exceptions thrown inside a call (std::bad_alloc
// when memory runs out, a library's std::system_error, ...) are caught at its entry point
// and returned as kOutOfMemory (bad_alloc) or kInternal, naming the call and the exception.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace streamrt {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kInvalidModel,
  kInvalidPlan,
  kInvalidProgram,
  kIncompatible,  // plan built for another device or format version
  kUnsupported,
  kNotFound,
  kInvalidState,
  kOutOfMemory,
  kDeviceError,
  kIoError,
  kInternal,
};

// Short name of a code, e.g. "InvalidPlan".
const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidPlan: <message>", or "OK".
  std::string to_string() const;
  // Returns a copy with "context: " prepended to the message (no-op on OK).
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() { return Status(); }

// Convenience constructors, one per code.
Status invalid_argument(std::string msg);
Status invalid_model(std::string msg);
Status invalid_plan(std::string msg);
Status invalid_program(std::string msg);
Status incompatible(std::string msg);
Status unsupported(std::string msg);
Status not_found(std::string msg);
Status invalid_state(std::string msg);
Status out_of_memory(std::string msg);
Status device_error(std::string msg);
Status io_error(std::string msg);
Status internal_error(std::string msg);

// What value() / operator-> / operator* of a Result holding an error do in every build (not
// only with assertions on): print the status to stderr and abort. Check ok() first.
[[noreturn]] void result_value_of_error(const Status& status);

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result constructed from an OK status without a value");
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "Result built from OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & {
    if (!ok()) result_value_of_error(status_);
    return *value_;
  }
  const T& value() const& {
    if (!ok()) result_value_of_error(status_);
    return *value_;
  }
  T&& value() && {
    if (!ok()) result_value_of_error(status_);
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace streamrt

#define SRT_CONCAT_INNER(a, b) a##b
#define SRT_CONCAT(a, b) SRT_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define SRT_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::streamrt::Status _srt_st = (expr);           \
    if (!_srt_st.ok()) return _srt_st;             \
  } while (0)

// `lhs = value of Result expr`, or return its Status.
#define SRT_ASSIGN_OR_RETURN(lhs, expr) \
  SRT_ASSIGN_OR_RETURN_IMPL(SRT_CONCAT(_srt_res_, __LINE__), lhs, expr)
#define SRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
