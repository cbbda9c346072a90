#include "ir/subgraph.h"

#include <cstring>

namespace streamrt::ir {
namespace {

Status bad(const std::string& where, const std::string& what) { return invalid_model(where + ": " + what); }

Status check_value(const Value& v, size_t i, const std::string& where) {
  const std::string at = where + " value " + std::to_string(i) + " '" + v.name + "'";
  if (v.dtype != DataType::kUndefined && !is_valid_dtype(static_cast<int>(v.dtype))) return bad(at, "has an invalid dtype");
  for (int64_t d : v.dims)
    if (d < kDynamicDim) return bad(at, "has an invalid dim " + std::to_string(d));
  if (!checked_numel(v.dims).ok() && dims_static(v.dims)) return bad(at, "has too many elements");
  return ok_status();
}

}  // namespace

Status check_subgraph(const Graph& g, int depth, const std::string& where) {
  if (depth > kMaxSubgraphDepth)
    return bad(where, "subgraphs nest deeper than " + std::to_string(kMaxSubgraphDepth) + " levels");
  const size_t nv = g.values.size();
  auto in_range = [&](ValueId id) { return id >= 0 && static_cast<size_t>(id) < nv; };
  for (size_t i = 0; i < nv; ++i) SRT_RETURN_IF_ERROR(check_value(g.values[i], i, where));
  // 0: undefined, 1: defined (input, constant or produced).
  std::vector<uint8_t> defined(nv, 0);
  for (const auto& [id, t] : g.constants) {
    if (!in_range(id)) return bad(where, "a constant has value id " + std::to_string(id) + ", out of range");
    if (t.empty() || !dims_static(t.dims()) || t.dtype() != g.value(id).dtype || t.dims() != g.value(id).dims)
      return bad(where, "constant '" + g.value(id).name + "' does not match its value's dtype and dims");
    defined[id] = 1;
  }
  if (g.num_captures < 0 || static_cast<size_t>(g.num_captures) > g.inputs.size())
    return bad(where, "num_captures " + std::to_string(g.num_captures) + " is outside [0, " +
                          std::to_string(g.inputs.size()) + "]");
  for (ValueId id : g.inputs) {
    if (!in_range(id)) return bad(where, "input id " + std::to_string(id) + " is out of range");
    if (defined[id]) return bad(where, "input '" + g.value(id).name + "' is listed twice or is a constant");
    defined[id] = 1;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const std::string at = where + " " + node.describe();
    for (ValueId id : node.inputs) {
      if (id == kNoValue) continue;
      if (!in_range(id)) return bad(at, "input id " + std::to_string(id) + " is out of range");
      if (!defined[id]) return bad(at, "reads '" + g.value(id).name + "' before anything defines it");
    }
    if (node.outputs.empty() || node.outputs[0] == kNoValue) return bad(at, "has no first output");
    for (ValueId id : node.outputs) {
      if (id == kNoValue) continue;
      if (!in_range(id)) return bad(at, "output id " + std::to_string(id) + " is out of range");
      if (defined[id]) return bad(at, "writes '" + g.value(id).name + "', which is already defined");
      defined[id] = 1;
    }
    for (const auto& [name, a] : node.attrs) {
      if (a.kind == Attribute::Kind::kTensor && (a.t.empty() || !dims_static(a.t.dims())))
        return bad(at, "attribute '" + name + "' holds no static tensor");
      if (a.kind != Attribute::Kind::kGraph) continue;
      if (!a.g) return bad(at, "attribute '" + name + "' holds no graph");
      SRT_RETURN_IF_ERROR(check_subgraph(*a.g, depth + 1, at + " attribute '" + name + "'"));
    }
  }
  for (ValueId id : g.outputs) {
    if (!in_range(id)) return bad(where, "output id " + std::to_string(id) + " is out of range");
    if (!defined[id]) return bad(where, "output '" + g.value(id).name + "' is never defined");
  }
  return ok_status();
}

bool has_subgraphs(const Graph& g) {
  for (const Node& n : g.nodes)
    for (const auto& [name, a] : n.attrs)
      if (a.kind == Attribute::Kind::kGraph) return true;
  return false;
}

bool same_graph(const Graph& a, const Graph& b, bool (*same_attr)(const Attribute&, const Attribute&)) {
  if (a.name != b.name || a.inputs != b.inputs || a.outputs != b.outputs || a.num_captures != b.num_captures ||
      a.values.size() != b.values.size() || a.nodes.size() != b.nodes.size() || a.constants.size() != b.constants.size())
    return false;
  for (size_t i = 0; i < a.values.size(); ++i) {
    const Value &x = a.values[i], &y = b.values[i];
    if (x.name != y.name || x.dtype != y.dtype || x.dims != y.dims || x.has_shape != y.has_shape) return false;
  }
  for (const auto& [id, t] : a.constants) {
    const Tensor* u = b.constant(id);
    if (!u || u->dtype() != t.dtype() || u->dims() != t.dims() ||
        (t.nbytes() && std::memcmp(u->data(), t.data(), t.nbytes()) != 0))
      return false;
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node &x = a.nodes[i], &y = b.nodes[i];
    if (x.name != y.name || x.op_type != y.op_type || x.domain != y.domain || x.opset != y.opset ||
        x.inputs != y.inputs || x.outputs != y.outputs || x.attrs.size() != y.attrs.size())
      return false;
    for (const auto& [name, attr] : x.attrs) {
      auto it = y.attrs.find(name);
      if (it == y.attrs.end() || !same_attr(attr, it->second)) return false;
    }
  }
  return true;
}

Status check_seq_type(const SeqType& t, DataType dtype, const Dims& dims, const std::string& where) {
  const int kind = static_cast<int>(t.kind);
  if (kind > static_cast<int>(kLastValueKind)) return invalid_model(where + ": invalid value kind " + std::to_string(kind));
  if (t.is_tensor()) {
    if (t.elem_dtype != DataType::kUndefined || !t.elem_dims.empty() || t.elem_has_shape)
      return invalid_model(where + ": a tensor with sequence element fields");
    return ok_status();
  }
  if (t.elem_dtype == DataType::kUndefined || !is_valid_dtype(static_cast<int>(t.elem_dtype)))
    return invalid_model(where + ": a " + value_kind_name(t.kind) + " of invalid element type " +
                         std::to_string(static_cast<int>(t.elem_dtype)));
  if (dtype != DataType::kUInt8 || dims.size() != 1)
    return invalid_model(where + ": a " + value_kind_name(t.kind) + " must be held as uint8 bytes of rank 1, not " +
                         dtype_name(dtype) + " " + dims_to_string(dims));
  if (t.elem_dims.size() > 64 || (!t.elem_has_shape && !t.elem_dims.empty()))
    return invalid_model(where + ": invalid element dims");
  for (int64_t d : t.elem_dims)
    if (d < kDynamicDim) return invalid_model(where + ": negative element dim " + std::to_string(d));
  return ok_status();
}

}  // namespace streamrt::ir
