// The steps whose output may share input 0's arena bytes (the same bytes under other dims). The
// builder gives such a step's output its input's slot (builder/lowering.cc: alias_views), and the
// plan verifier allows exactly these to overlap a live activation: one rule for both, set by
// each op's registration (OpSchema::view).
#pragma once

#include "ir/graph.h"
#include "ops/op.h"

namespace streamrt::plan {

inline bool is_view_step(const ir::Node& n) {
  if (n.inputs.empty() || n.outputs.size() != 1) return false;
  const ops::OpSchema* s = ops::schema_of(n);  // OpSchema::view: Reshape, Squeeze, Identity, ...
  return s && s->view;
}

}  // namespace streamrt::plan
