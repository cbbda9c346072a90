// Internal state of a loaded Method (shared by method.cc and module.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "program/program_format.h"
#include "streamrt/backend.h"

namespace streamrt {

struct MethodState {
  struct Delegate {
    std::string backend_name;
    BackendInterface* backend = nullptr;
    DelegateHandle* handle = nullptr;
  };
  std::shared_ptr<const LoadedProgram> program;
  const program::MethodData* data = nullptr;
  std::vector<EValue> initial;  // per value: constants, scalars and lists; tensors none
  std::vector<Delegate> delegates;

  ~MethodState() {
    // Every handle a successful init returned is destroyed exactly once, here.
    for (Delegate& d : delegates)
      if (d.backend) d.backend->destroy(d.handle);
  }
  // Calls `backend`'s set_option / get_option with the handles of its delegates in `methods`;
  // kNotFound when none of them has one.
  static Status set_option(std::vector<const MethodState*> methods, const std::string& backend,
                           std::span<const BackendOption> options);
  static Status get_option(std::vector<const MethodState*> methods, const std::string& backend,
                           std::span<BackendOption> options);
};

}  // namespace streamrt
