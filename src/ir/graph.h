// The intermediate representation: a graph of nodes over values, with constant tensors.
// Built by the ONNX importer, transformed by builder passes, serialized into a plan.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"
#include "streamrt/status.h"
#include "streamrt/types.h"

namespace streamrt::ir {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an omitted optional input

class Graph;

struct Attribute {
  // Numbering is part of the plan format: only append.
  enum class Kind : uint8_t { kInt = 0, kFloat, kString, kInts, kFloats, kStrings, kTensor, kGraph };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  float f = 0.f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  Tensor t;
  // kGraph: a subgraph (If's branches, Loop's / Scan's body), shared and never edited in place
  // (see ir/subgraph.h for how it binds to its node).
  std::shared_ptr<const Graph> g;

  static Attribute make_int(int64_t v) { Attribute a; a.kind = Kind::kInt; a.i = v; return a; }
  static Attribute make_float(float v) { Attribute a; a.kind = Kind::kFloat; a.f = v; return a; }
  static Attribute make_string(std::string v) { Attribute a; a.kind = Kind::kString; a.s = std::move(v); return a; }
  static Attribute make_ints(std::vector<int64_t> v) { Attribute a; a.kind = Kind::kInts; a.ints = std::move(v); return a; }
  static Attribute make_floats(std::vector<float> v) { Attribute a; a.kind = Kind::kFloats; a.floats = std::move(v); return a; }
  static Attribute make_tensor(Tensor v) { Attribute a; a.kind = Kind::kTensor; a.t = std::move(v); return a; }
  static Attribute make_graph(std::shared_ptr<const Graph> v) { Attribute a; a.kind = Kind::kGraph; a.g = std::move(v); return a; }
};

const char* attribute_kind_name(Attribute::Kind k);

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for ai.onnx
  int opset = 0;       // opset version of `domain` in the model
  std::vector<ValueId> inputs;   // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;  // kNoValue for an unused optional output
  std::map<std::string, Attribute> attrs;

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  // Typed attribute getters. A missing attribute yields `def` if given, else an error;
  // an attribute of the wrong kind is always an error naming node and attribute.
  Result<int64_t> attr_int(const std::string& key, std::optional<int64_t> def = std::nullopt) const;
  Result<float> attr_float(const std::string& key, std::optional<float> def = std::nullopt) const;
  Result<std::string> attr_string(const std::string& key,
                                  std::optional<std::string> def = std::nullopt) const;
  Result<std::vector<int64_t>> attr_ints(const std::string& key,
                                         std::optional<std::vector<int64_t>> def = std::nullopt) const;
  Result<std::vector<float>> attr_floats(const std::string& key,
                                         std::optional<std::vector<float>> def = std::nullopt) const;
  Result<Tensor> attr_tensor(const std::string& key) const;
  // A GRAPH attribute: never null on success.
  Result<const Graph*> attr_graph(const std::string& key) const;
  // "node 'name' (OpType)", for error messages.
  std::string describe() const;
  // Builds an error Status with code `code` prefixed by describe().
  Status error(StatusCode code, const std::string& msg) const;
};

// The type of a non-tensor value (ONNX sequence / optional). Such a value travels through the
// engine as one uint8 tensor of dims [bytes] in the sequence encoding (ops/sequence_value.h):
// its Value / TensorInfo dtype is kUInt8 and its dims [bytes] ([-1] until its contents are known);
// SeqType says what it holds: the kind, and its tensors' element type and dims as far as known.
struct SeqType {
  ValueKind kind = ValueKind::kTensor;
  DataType elem_dtype = DataType::kUndefined;
  Dims elem_dims;               // may contain kDynamicDim
  bool elem_has_shape = false;  // rank of the elements known (all of one rank)
  bool is_tensor() const { return kind == ValueKind::kTensor; }
  bool operator==(const SeqType&) const = default;
};

struct Value {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Dims dims;              // may contain kDynamicDim
  bool has_shape = false;  // false until known (rank unknown)
  SeqType seq;            // kind kTensor for tensors (all but sequence / optional values)
};

class Graph {
 public:
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;          // topologically ordered once topo_sort() succeeded
  std::vector<ValueId> inputs;      // graph inputs that are not constants
  std::vector<ValueId> outputs;
  std::unordered_map<ValueId, Tensor> constants;  // initializers and folded constants
  // Subgraphs only: the last num_captures `inputs` are values of the enclosing graph that the
  // body reads by name; the importer makes them explicit inputs of the node (ir/subgraph.h).
  int32_t num_captures = 0;
  // Graph inputs' dims as the model names them (ONNX dim_param; "" for a dim without one). One
  // name is one size in every run of the model (ONNX IR), so the builder may treat dims of
  // different inputs that share a name as equal (builder/dim_tracer.*).
  std::unordered_map<ValueId, std::vector<std::string>> input_dim_params;

  ValueId add_value(const std::string& name, DataType dtype = DataType::kUndefined,
                    Dims dims = {}, bool has_shape = false);
  // kNoValue if absent. Linear lookups are avoided by an index kept in sync by add_value.
  ValueId find_value(const std::string& name) const;
  const Tensor* constant(ValueId id) const;
  bool is_constant(ValueId id) const { return constants.count(id) != 0; }
  // Sets `id`'s constant tensor and its dtype/dims.
  void set_constant(ValueId id, Tensor t);
  const Value& value(ValueId id) const { return values[static_cast<size_t>(id)]; }
  Value& value(ValueId id) { return values[static_cast<size_t>(id)]; }

  // Orders nodes so every input is produced before use; kInvalidModel on a cycle or on an
  // input that nothing produces (naming the node and value).
  Status topo_sort();
  // Rebuilds the name index (after values were edited or removed directly).
  void reindex();

 private:
  std::unordered_map<std::string, ValueId> index_;
};

}  // namespace streamrt::ir
