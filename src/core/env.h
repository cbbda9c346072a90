// Environment switches (STREAMRT_NO_*_FUSION, STREAMRT_PROFILE, ...): one reading of "set".
#pragma once

#include <cstdlib>
#include <string_view>

namespace streamrt {

// True when `name` is set to something other than "" or "0".
inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string_view(v) != "0";
}

}  // namespace streamrt
