#include "ir/graph.h"

#include <queue>

namespace streamrt::ir {

const char* attribute_kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kGraph: return "graph";
  }
  return "unknown";
}

std::string Node::describe() const {
  return "node '" + name + "' (" + op_type + ")";
}

Status Node::error(StatusCode code, const std::string& msg) const {
  return Status(code, describe() + ": " + msg);
}

namespace {

template <typename T>
Result<T> get_attr(const Node& n, const std::string& key, Attribute::Kind kind,
                   const std::optional<T>& def, T Attribute::*field) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) {
    if (def) return *def;
    return n.error(StatusCode::kInvalidModel, "missing required attribute '" + key + "'");
  }
  if (it->second.kind != kind)
    return n.error(StatusCode::kInvalidModel,
                   "attribute '" + key + "' is " + attribute_kind_name(it->second.kind) +
                       ", expected " + attribute_kind_name(kind));
  return it->second.*field;
}

}  // namespace

Result<int64_t> Node::attr_int(const std::string& key, std::optional<int64_t> def) const {
  return get_attr<int64_t>(*this, key, Attribute::Kind::kInt, def, &Attribute::i);
}
Result<float> Node::attr_float(const std::string& key, std::optional<float> def) const {
  return get_attr<float>(*this, key, Attribute::Kind::kFloat, def, &Attribute::f);
}
Result<std::string> Node::attr_string(const std::string& key, std::optional<std::string> def) const {
  return get_attr<std::string>(*this, key, Attribute::Kind::kString, def, &Attribute::s);
}
Result<std::vector<int64_t>> Node::attr_ints(const std::string& key,
                                             std::optional<std::vector<int64_t>> def) const {
  return get_attr<std::vector<int64_t>>(*this, key, Attribute::Kind::kInts, def, &Attribute::ints);
}
Result<std::vector<float>> Node::attr_floats(const std::string& key,
                                             std::optional<std::vector<float>> def) const {
  return get_attr<std::vector<float>>(*this, key, Attribute::Kind::kFloats, def,
                                      &Attribute::floats);
}
Result<Tensor> Node::attr_tensor(const std::string& key) const {
  return get_attr<Tensor>(*this, key, Attribute::Kind::kTensor, std::nullopt, &Attribute::t);
}

Result<const Graph*> Node::attr_graph(const std::string& key) const {
  SRT_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> g,
                       (get_attr<std::shared_ptr<const Graph>>(*this, key, Attribute::Kind::kGraph, std::nullopt,
                                                               &Attribute::g)));
  if (!g) return error(StatusCode::kInvalidModel, "attribute '" + key + "' holds no graph");
  return g.get();
}

ValueId Graph::add_value(const std::string& name, DataType dtype, Dims dims, bool has_shape) {
  ValueId id = static_cast<ValueId>(values.size());
  values.push_back(Value{name, dtype, std::move(dims), has_shape});
  if (!name.empty()) index_[name] = id;
  return id;
}

ValueId Graph::find_value(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? kNoValue : it->second;
}

const Tensor* Graph::constant(ValueId id) const {
  auto it = constants.find(id);
  return it == constants.end() ? nullptr : &it->second;
}

void Graph::set_constant(ValueId id, Tensor t) {
  Value& v = value(id);
  v.dtype = t.dtype();
  v.dims = t.dims();
  v.has_shape = true;
  constants[id] = std::move(t);
}

void Graph::reindex() {
  index_.clear();
  for (size_t i = 0; i < values.size(); ++i)
    if (!values[i].name.empty()) index_[values[i].name] = static_cast<ValueId>(i);
}

Status Graph::topo_sort() {
  const size_t nv = values.size();
  std::vector<int> producer(nv, -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId o : nodes[i].outputs) {
      if (o == kNoValue) continue;
      if (o < 0 || static_cast<size_t>(o) >= nv)
        return internal_error(nodes[i].describe() + ": output id out of range");
      if (producer[o] >= 0 || is_constant(o))
        return invalid_model("value '" + values[o].name + "' is produced more than once");
      producer[o] = static_cast<int>(i);
    }
  std::vector<bool> is_input(nv, false);
  for (ValueId v : inputs) is_input[v] = true;
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId in : nodes[i].inputs) {
      if (in == kNoValue) continue;
      if (in < 0 || static_cast<size_t>(in) >= nv)
        return internal_error(nodes[i].describe() + ": input id out of range");
      if (producer[in] >= 0) {
        ++pending[i];
        users[producer[in]].push_back(static_cast<int>(i));
      } else if (!is_input[in] && !is_constant(in)) {
        return invalid_model(nodes[i].describe() + ": input '" + values[in].name +
                             "' is not a graph input, an initializer or any node's output");
      }
    }
  }
  std::queue<int> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(static_cast<int>(i));
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop();
    for (int u : users[i])
      if (--pending[u] == 0) ready.push(u);
    sorted.push_back(std::move(nodes[i]));
  }
  if (sorted.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] > 0) return invalid_model("graph has a cycle through " + nodes[i].describe());
  }
  nodes = std::move(sorted);
  return ok_status();
}

}  // namespace streamrt::ir
