// The C++ API promises no exceptions: each public entry point runs its body through guard(),
// which turns anything thrown (std::bad_alloc from a model too large for memory, a library's
// std::system_error or std::length_error, ...) into a Status that names the call.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

#include "streamrt/status.h"

namespace streamrt {

// The Status for the exception being handled (call only inside a catch block): kOutOfMemory for
// std::bad_alloc, kInternal naming the exception's type and what() otherwise; the message starts
// with `where` (the API call, e.g. "build_plan_file 'model.onnx'").
Status exception_status(std::string_view where);

// Runs `fn` (returning Status or Result<T>) and returns its result, or exception_status(where)
// when it throws. `where` is a string, or a callable returning one (built only on a throw, so that
// hot calls such as ExecutionContext::execute pay nothing for naming themselves).
template <typename Where, typename F>
auto guard(const Where& where, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (...) {
    if constexpr (std::is_invocable_v<const Where&>) return exception_status(where());
    else return exception_status(where);
  }
}

namespace testing {

// Tests of the guards: a hook called at named points of long operations (the builder's stages:
// "import", "shapes", "passes", "lowering"), which may throw there. Not thread-safe: set it
// before the operation; null removes it.
void set_throw_hook(std::function<void(std::string_view point)> hook);
// Calls the hook, if any, with `point`.
void throw_point(std::string_view point);

}  // namespace testing
}  // namespace streamrt
