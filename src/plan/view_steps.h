// The steps whose output may share input 0's arena bytes (the same bytes under other dims). The
// builder gives such a step's output its input's slot (builder/lowering.cc: alias_views), and the
// plan verifier allows exactly these to overlap a live activation: one list for both.
#pragma once

#include <string>

#include "ir/graph.h"

namespace streamrt::plan {

inline bool is_view_step(const ir::Node& n) {
  if (!n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) return false;
  const std::string& op = n.op_type;
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity";
}

}  // namespace streamrt::plan
