#include "core/guard.h"

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <typeinfo>

namespace streamrt {
namespace {

// "std::length_error" rather than "St12length_error".
std::string type_name(const std::type_info& t) {
  int st = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &st), std::free);
  return st == 0 && name ? std::string(name.get()) : std::string(t.name());
}

std::function<void(std::string_view)>& throw_hook() {
  static std::function<void(std::string_view)> hook;
  return hook;
}

}  // namespace

Status exception_status(std::string_view where) {
  const std::string at(where);
  try {
    throw;
  } catch (const std::bad_alloc& e) {
    return out_of_memory(at + ": out of memory (" + type_name(typeid(e)) + ": " + e.what() + ")");
  } catch (const std::exception& e) {
    return internal_error(at + ": unexpected exception " + type_name(typeid(e)) + ": " + e.what());
  } catch (...) {
    return internal_error(at + ": unexpected exception of unknown type");
  }
}

namespace testing {

void set_throw_hook(std::function<void(std::string_view point)> hook) { throw_hook() = std::move(hook); }

void throw_point(std::string_view point) {
  if (throw_hook()) throw_hook()(point);
}

}  // namespace testing
}  // namespace streamrt
