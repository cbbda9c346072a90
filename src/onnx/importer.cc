#include "onnx/importer.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <climits>
#include <unordered_set>

#include "core/file_io.h"
#include "ir/shape_inference.h"
#include "ir/subgraph.h"
#include "onnx/functions/function_op.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor_proto.h"

namespace streamrt::onnx_import {
namespace {

// The model's ai.onnx opset as written (1 when no opset is imported: IR version 3).
int64_t default_opset_version(const onnx::ModelProto& m) {
  int64_t v = 1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") v = o.version();
  return v;
}

struct Importer {
  const std::string& base_dir;
  ir::Graph g;
  std::unordered_map<std::string, int> opsets;
  bool check_supported = true;
  // Subgraphs (If / Loop / Scan bodies): the enclosing scope, the nesting level, the names this
  // graph defines itself, and those it reads from outside (captures, in order of first use).
  Importer* parent = nullptr;
  int depth = 0;
  std::unordered_set<std::string> local_names;
  std::vector<std::string> captured;

  ir::ValueId value_for(const std::string& name) {
    if (name.empty()) return ir::kNoValue;
    ir::ValueId id = g.find_value(name);
    if (id != ir::kNoValue) return id;
    id = g.add_value(name);
    if (parent && !local_names.count(name)) captured.push_back(name);
    return id;
  }

  // A fresh value for an omitted output of node `node_name`.
  ir::ValueId unused_output(const std::string& node_name) {
    std::string name = node_name + "/unused_output_0";
    while (g.find_value(name) != ir::kNoValue) name += "_";
    return g.add_value(name);
  }

  Status read_opsets(const onnx::ModelProto& m) {
    for (const auto& o : m.opset_import()) {
      std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
      // Clamp before narrowing so that e.g. 2^32 + 17 is not taken for opset 17.
      opsets[domain] = static_cast<int>(std::clamp<int64_t>(o.version(), -1, INT_MAX));
    }
    if (!opsets.count("")) {
      if (m.opset_import_size() == 0) opsets[""] = 1;  // IR v3 default
      else return ok_status();                          // only custom domains
    }
    int v = opsets[""];
    if (v < kMinOpset || v > kMaxOpset)
      return unsupported("model uses ai.onnx opset " + std::to_string(default_opset_version(m)) +
                         "; streamrt supports " + std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset));
    return ok_status();
  }

  // A tensor type's element type and dims (`has_shape` false when the proto gives no shape).
  static Status read_tensor_type(const onnx::TypeProto::Tensor& tt, const std::string& name, bool need_type,
                                 DataType* dtype, Dims* dims, bool* has_shape) {
    if (tt.elem_type() != 0) {
      SRT_ASSIGN_OR_RETURN(*dtype, dtype_from_onnx(tt.elem_type(), "graph tensor '" + name + "'"));
    } else if (need_type) {
      return invalid_model("graph value '" + name + "' has no element type");
    }
    *has_shape = tt.has_shape();
    dims->clear();
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() < 0)
        return invalid_model("graph tensor '" + name + "' has a negative dimension");
      dims->push_back(d.has_dim_value() ? d.dim_value() : kDynamicDim);
    }
    return ok_status();
  }

  // A sequence / optional type (ir::SeqType): seq(tensor), optional(tensor), optional(seq(tensor)).
  static Status read_seq_type(const onnx::TypeProto& tp, const std::string& name, ir::SeqType* out) {
    const onnx::TypeProto* elem = nullptr;
    if (tp.has_sequence_type()) {
      out->kind = ValueKind::kSequence;
      elem = &tp.sequence_type().elem_type();
    } else if (tp.has_optional_type()) {
      const onnx::TypeProto& inner = tp.optional_type().elem_type();
      out->kind = inner.has_sequence_type() ? ValueKind::kOptionalSequence : ValueKind::kOptionalTensor;
      elem = inner.has_sequence_type() ? &inner.sequence_type().elem_type() : &inner;
    } else {
      return unsupported("graph value '" + name + "' is a map or sparse tensor; streamrt takes tensors, sequences and optionals");
    }
    if (!elem->has_tensor_type())
      return unsupported("graph value '" + name + "' is a " + value_kind_name(out->kind) +
                         " of something other than tensors (nested sequences and maps are not supported)");
    return read_tensor_type(elem->tensor_type(), name, true, &out->elem_dtype, &out->elem_dims, &out->elem_has_shape);
  }

  Status read_value_info(const onnx::ValueInfoProto& vi, ir::ValueId id, bool required) {
    ir::Value& v = g.value(id);
    if (vi.has_type() && !vi.type().has_tensor_type() && vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) {
      // Held as the bytes of its encoding (ops/sequence_value.h): uint8 of data-dependent length.
      SRT_RETURN_IF_ERROR(read_seq_type(vi.type(), vi.name(), &v.seq));
      v.dtype = DataType::kUInt8;
      v.dims = {kDynamicDim};
      v.has_shape = true;
      return ok_status();
    }
    if (!vi.has_type() || !vi.type().has_tensor_type()) {
      if (required) return unsupported("graph input '" + vi.name() + "' is not a tensor");
      return ok_status();
    }
    const auto& tt = vi.type().tensor_type();
    SRT_RETURN_IF_ERROR(read_tensor_type(tt, vi.name(), required, &v.dtype, &v.dims, &v.has_shape));
    if (!tt.has_shape()) {
      v.dims.clear();
      if (required) return unsupported("graph input '" + vi.name() + "' has no shape (rank unknown)");
    }
    return ok_status();
  }

  // Optional's `type` (a TypeProto) as INTS [kind, dtype, has_shape, rank, dims...] (ops/optional.cc).
  static Result<ir::Attribute> type_attr(const onnx::TypeProto& tp, const ir::Node& n) {
    ir::SeqType t;
    if (tp.has_tensor_type()) {
      SRT_RETURN_IF_ERROR(read_tensor_type(tp.tensor_type(), n.name, true, &t.elem_dtype, &t.elem_dims, &t.elem_has_shape));
    } else if (tp.has_sequence_type()) {
      SRT_RETURN_IF_ERROR(read_seq_type(tp, n.name, &t));
    } else {
      return n.error(StatusCode::kUnsupported, "attribute 'type' is neither a tensor nor a sequence type");
    }
    std::vector<int64_t> v = {static_cast<int64_t>(t.kind), static_cast<int64_t>(t.elem_dtype), t.elem_has_shape ? 1 : 0,
                              static_cast<int64_t>(t.elem_dims.size())};
    v.insert(v.end(), t.elem_dims.begin(), t.elem_dims.end());
    return ir::Attribute::make_ints(std::move(v));
  }

  Result<ir::Attribute> convert_attr(const onnx::AttributeProto& a, const ir::Node& n) {
    using A = onnx::AttributeProto;
    switch (a.type()) {
      case A::INT: return ir::Attribute::make_int(a.i());
      case A::FLOAT: return ir::Attribute::make_float(a.f());
      case A::STRING: return ir::Attribute::make_string(a.s());
      case A::INTS: return ir::Attribute::make_ints({a.ints().begin(), a.ints().end()});
      case A::FLOATS: return ir::Attribute::make_floats({a.floats().begin(), a.floats().end()});
      case A::STRINGS: {
        ir::Attribute r;
        r.kind = ir::Attribute::Kind::kStrings;
        r.strings.assign(a.strings().begin(), a.strings().end());
        return r;
      }
      case A::TENSOR: {
        auto t = tensor_from_proto(a.t(), base_dir);
        if (!t.ok()) return t.status().with_context(n.describe() + " attribute '" + a.name() + "'");
        return ir::Attribute::make_tensor(std::move(t).value());
      }
      case A::GRAPH: return import_subgraph(a, n);
      case A::TYPE_PROTO: return type_attr(a.tp(), n);
      default:
        return n.error(StatusCode::kUnsupported,
                       "attribute '" + a.name() + "' has unsupported type " + A::AttributeType_Name(a.type()));
    }
  }

  // A body, imported in a scope of its own; the names it reads from outside end its inputs
  // (num_captures) until bind_captures gives every body of the node the same list.
  Result<ir::Attribute> import_subgraph(const onnx::AttributeProto& a, const ir::Node& n) {
    const std::string where = n.describe() + " attribute '" + a.name() + "'";
    if (depth + 1 > ir::kMaxSubgraphDepth)
      return invalid_model(where + ": subgraphs nest deeper than " + std::to_string(ir::kMaxSubgraphDepth) + " levels");
    Importer sub{base_dir, {}, opsets, check_supported, this, depth + 1, {}, {}, {}};
    for (const auto& init : a.g().initializer()) sub.local_names.insert(init.name());
    for (const auto& in : a.g().input()) sub.local_names.insert(in.name());
    for (const auto& np : a.g().node())
      for (const auto& out : np.output()) sub.local_names.insert(out);
    Status st = sub.read_graph(a.g());
    if (st.ok()) st = sub.finish_subgraph();
    if (!st.ok()) return st.with_context(where);
    auto body = std::make_shared<ir::Graph>(std::move(sub.g));
    bodies.push_back(body);
    return ir::Attribute::make_graph(body);
  }

  // The bodies of the node being read (bind_captures finishes them).
  std::vector<std::shared_ptr<ir::Graph>> bodies;

  // A body's own checks once read: captures as inputs, order, function ops, supported ops.
  Status finish_subgraph() {
    for (const std::string& name : captured) g.inputs.push_back(g.find_value(name));
    g.num_captures = static_cast<int32_t>(captured.size());
    if (g.topo_sort().ok()) SRT_RETURN_IF_ERROR(expand_function_ops(g));
    std::string missing = ir::unsupported_ops(g, check_supported);
    if (!missing.empty()) return unsupported("unsupported ops: " + missing);
    return g.topo_sort();
  }

  // Every body of node `n` gets the union of what any of them captures, in one order, as its
  // last inputs; the node reads the same values (resolved in this scope) as its last inputs.
  void bind_captures(ir::Node& n) {
    std::vector<std::string> all;
    std::unordered_set<std::string> seen;
    for (const auto& body : bodies)
      for (size_t i = body->inputs.size() - body->num_captures; i < body->inputs.size(); ++i)
        if (seen.insert(body->value(body->inputs[i]).name).second) all.push_back(body->value(body->inputs[i]).name);
    for (const auto& body : bodies) {
      std::unordered_map<std::string, ir::ValueId> own;
      for (size_t i = body->inputs.size() - body->num_captures; i < body->inputs.size(); ++i)
        own[body->value(body->inputs[i]).name] = body->inputs[i];
      body->inputs.resize(body->inputs.size() - body->num_captures);
      for (const std::string& name : all) {
        auto it = own.find(name);
        if (it != own.end()) {
          body->inputs.push_back(it->second);
          continue;
        }
        // Captured by another body only: an input this one never reads (its name may be local here).
        std::string fresh = name;
        while (body->find_value(fresh) != ir::kNoValue) fresh += "'";
        body->inputs.push_back(body->add_value(fresh));
      }
      body->num_captures = static_cast<int32_t>(all.size());
    }
    // Captures follow Loop's M and cond even where the model leaves both out.
    if (!bodies.empty() && n.op_type == "Loop" && n.domain.empty())
      while (n.inputs.size() < 2) n.inputs.push_back(ir::kNoValue);
    for (const std::string& name : all) n.inputs.push_back(value_for(name));
    bodies.clear();
  }

  Status read_graph(const onnx::GraphProto& gp) {
    g.name = gp.name();
    std::unordered_set<std::string> init_names;
    for (const auto& init : gp.initializer()) {
      if (init.name().empty()) return invalid_model("an initializer has no name");
      if (!init_names.insert(init.name()).second)
        return invalid_model("initializer '" + init.name() + "' is defined twice");
      SRT_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(init, base_dir));
      g.set_constant(value_for(init.name()), std::move(t));
    }
    if (gp.sparse_initializer_size() > 0) return unsupported("sparse initializers are not supported");
    std::unordered_set<std::string> input_names;
    for (const auto& in : gp.input()) {
      if (in.name().empty()) return invalid_model("a graph input has no name");
      if (!input_names.insert(in.name()).second)
        return invalid_model("graph input '" + in.name() + "' is listed twice");
      if (init_names.count(in.name())) continue;  // old-style: initializers listed as inputs
      ir::ValueId id = value_for(in.name());
      SRT_RETURN_IF_ERROR(read_value_info(in, id, parent == nullptr));
      g.inputs.push_back(id);
      if (in.type().has_tensor_type()) {
        std::vector<std::string> params;
        bool any = false;
        for (const auto& d : in.type().tensor_type().shape().dim()) {
          params.push_back(d.has_dim_param() ? d.dim_param() : "");
          any = any || d.has_dim_param();
        }
        if (any) g.input_dim_params[id] = std::move(params);
      }
    }
    for (const auto& out : gp.output()) {
      if (out.name().empty()) return invalid_model("a graph output has no name");
      ir::ValueId id = value_for(out.name());
      SRT_RETURN_IF_ERROR(read_value_info(out, id, false));
      g.outputs.push_back(id);
    }
    int unnamed = 0;
    for (const auto& np : gp.node()) {
      ir::Node n;
      n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(unnamed++) : np.name();
      n.op_type = np.op_type();
      n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
      auto it = opsets.find(n.domain);
      if (it == opsets.end())
        return invalid_model(n.describe() + ": domain '" + n.domain + "' is not imported by the model");
      n.opset = it->second;
      // ONNX ops all have an output, and op rules index output 0 without checking.
      if (np.output_size() == 0) return invalid_model(n.describe() + " has no outputs");
      for (const auto& in : np.input()) n.inputs.push_back(value_for(in));
      for (const auto& out : np.output()) n.outputs.push_back(value_for(out));
      // RNN / GRU / LSTM may leave their first output (Y) unnamed, yet the rest of streamrt
      // takes output 0 as always bound: it gets a value of its own that nothing reads.
      if (n.outputs[0] == ir::kNoValue) n.outputs[0] = unused_output(n.name);
      for (const auto& a : np.attribute()) {
        if (!a.ref_attr_name().empty())
          return n.error(StatusCode::kUnsupported, "attribute references are not supported");
        SRT_ASSIGN_OR_RETURN(n.attrs[a.name()], convert_attr(a, n));
      }
      bind_captures(n);
      g.nodes.push_back(std::move(n));
    }
    return ok_status();
  }
};

}  // namespace

Result<ir::Graph> import_onnx_bytes(const void* data, size_t size, const std::string& base_dir,
                                    const ImportOptions& options) {
  if (size > static_cast<size_t>(INT_MAX))
    return invalid_model("ONNX model is over 2 GiB; store its weights as external data");
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(static_cast<const uint8_t*>(data), static_cast<int>(size));
  stream.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage())
    return invalid_model("not a valid ONNX model (protobuf parse failed)");
  if (!model.has_graph()) return invalid_model("ONNX model has no graph");
  Importer imp{base_dir, {}, {}, options.check_supported};
  SRT_RETURN_IF_ERROR(imp.read_opsets(model));
  SRT_RETURN_IF_ERROR(imp.read_graph(model.graph()));
  // Function ops (ONNX Attention, RotaryEmbedding) become their bodies; they need the graph in order.
  if (imp.g.topo_sort().ok()) SRT_RETURN_IF_ERROR(expand_function_ops(imp.g));
  // An op older than its min_opset had other semantics: refused even when unknown ops are
  // left for later, so it is never run with the newer meaning.
  std::string missing = ir::unsupported_ops(imp.g, options.check_supported);
  if (!missing.empty()) return unsupported("unsupported ops: " + missing);
  SRT_RETURN_IF_ERROR(imp.g.topo_sort());
  if (imp.g.outputs.empty()) return invalid_model("ONNX graph has no outputs");
  return std::move(imp.g);
}

Result<ir::Graph> import_onnx_file(const std::string& path, const ImportOptions& options) {
  // Opened without blocking (a FIFO or device is refused) and sized before it is read.
  auto file = InputFile::open(path, UINT64_MAX);
  if (!file.ok()) return file.status().with_context("cannot open ONNX model '" + path + "'");
  if (file->size() > static_cast<uint64_t>(INT_MAX))
    return invalid_model("ONNX model '" + path + "' has " + std::to_string(file->size()) +
                         " bytes, over protobuf's 2 GiB limit; store its weights as external data");
  auto bytes = file->read_all();
  if (!bytes.ok()) return bytes.status().with_context("cannot read ONNX model '" + path + "'");
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  auto g = import_onnx_bytes(bytes->data(), bytes->size(), dir, options);
  if (!g.ok()) return g.status().with_context(path);
  return g;
}

Result<std::vector<ir::Node>> read_node_ops(const std::string& path) {
  auto file = InputFile::open(path, INT_MAX);
  if (!file.ok()) return file.status().with_context("cannot open ONNX model '" + path + "'");
  SRT_ASSIGN_OR_RETURN(std::string bytes, file->read_all());
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&stream)) return invalid_model(path + ": not a valid ONNX model");
  std::unordered_map<std::string, int> opsets;
  for (const auto& o : model.opset_import())
    opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = static_cast<int>(std::clamp<int64_t>(o.version(), -1, INT_MAX));
  std::vector<ir::Node> out;
  for (const auto& np : model.graph().node()) {
    ir::Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.opset = opsets.count(n.domain) ? opsets[n.domain] : 0;
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace streamrt::onnx_import
