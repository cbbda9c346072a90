#include "streamrt/status.h"

#include <cstdio>
#include <cstdlib>

namespace streamrt {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kInvalidModel: return "InvalidModel";
    case StatusCode::kInvalidPlan: return "InvalidPlan";
    case StatusCode::kInvalidProgram: return "InvalidProgram";
    case StatusCode::kIncompatible: return "Incompatible";
    case StatusCode::kUnsupported: return "Unsupported";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kInvalidState: return "InvalidState";
    case StatusCode::kOutOfMemory: return "OutOfMemory";
    case StatusCode::kDeviceError: return "DeviceError";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
Status invalid_model(std::string m) { return {StatusCode::kInvalidModel, std::move(m)}; }
Status invalid_plan(std::string m) { return {StatusCode::kInvalidPlan, std::move(m)}; }
Status invalid_program(std::string m) { return {StatusCode::kInvalidProgram, std::move(m)}; }
Status incompatible(std::string m) { return {StatusCode::kIncompatible, std::move(m)}; }
Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
Status invalid_state(std::string m) { return {StatusCode::kInvalidState, std::move(m)}; }
Status out_of_memory(std::string m) { return {StatusCode::kOutOfMemory, std::move(m)}; }
Status device_error(std::string m) { return {StatusCode::kDeviceError, std::move(m)}; }
Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

void result_value_of_error(const Status& status) {
  std::fprintf(stderr, "streamrt: Result::value() called on an error: %s\n", status.to_string().c_str());
  std::abort();
}

}  // namespace streamrt
