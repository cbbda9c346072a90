// inspect output: names in plans and programs are arbitrary bytes, but nlohmann::json throws
// (type_error 316) when it dumps a string that is not UTF-8, and a terminal wants UTF-8 too.
#pragma once

#include <nlohmann/json.hpp>

#include "core/utf8.h"

namespace streamrt::cli {

// `j` with every string and object key made valid UTF-8 (invalid bytes written as \xHH).
inline nlohmann::json printable_json(const nlohmann::json& j) {
  if (j.is_string()) return printable_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& x : j) out.push_back(printable_json(x));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out[printable_utf8(k)] = printable_json(v);
    return out;
  }
  return j;
}

}  // namespace streamrt::cli
