// Build-time sequences: the TorchScript exporter writes list code as sequence ops
// (SequenceConstruct / SequenceInsert / SequenceErase feeding SequenceAt, ConcatFromSequence,
// SequenceLength; SplitToSequence for tensor.split / unbind). Where the builder knows which tensor
// each element is (constant positions, a split of a known count), the sequence is only a list of
// graph values, and its readers become tensor ops: SequenceAt an Identity of the element,
// ConcatFromSequence a Concat (Unsqueeze each first for new_axis = 1), SequenceLength a constant,
// SplitToSequence a Split (and Squeeze, keepdims = 0). The sequence ops left without readers are
// dead code; what stays unknown runs on the host (ops/sequence_value.h).
#include <algorithm>

#include "builder/passes.h"
#include "ops/sequence_value.h"

namespace streamrt::builder {
namespace {

using Elems = std::vector<ir::ValueId>;

struct Folder {
  ir::Graph& g;
  std::unordered_map<ir::ValueId, Elems> known;  // sequence value -> its elements, in order
  std::vector<ir::Node> added;                   // new nodes (topologically sorted afterwards)
  size_t changed = 0;

  std::string fresh(std::string base) {
    while (g.find_value(base) != ir::kNoValue) base += "'";
    return base;
  }
  ir::ValueId constant(const std::string& name, Tensor t) {
    ir::ValueId id = g.add_value(fresh(name));
    g.set_constant(id, std::move(t));
    return id;
  }
  ir::ValueId i64s(const std::string& name, const std::vector<int64_t>& v, bool scalar = false) {
    return constant(name, Tensor::from_vector<int64_t>(DataType::kInt64, scalar ? Dims{} : Dims{static_cast<int64_t>(v.size())}, v));
  }
  ir::ValueId add_node(const std::string& name, const std::string& op, std::vector<ir::ValueId> ins, const std::string& out_name) {
    ir::Node n;
    n.name = fresh(name);
    n.op_type = op;
    n.opset = 13;  // axes / split as inputs
    n.inputs = std::move(ins);
    ir::ValueId out = g.add_value(fresh(out_name));
    n.outputs = {out};
    added.push_back(std::move(n));
    return out;
  }

  // The elements of sequence value `v` when known: traced, or decoded from a constant.
  const Elems* elems(ir::ValueId v) {
    if (v == ir::kNoValue) return nullptr;
    if (auto it = known.find(v); it != known.end()) return &it->second;
    const Tensor* c = g.constant(v);
    if (!c || g.value(v).seq.kind != ValueKind::kSequence) return nullptr;
    auto s = ops::decode_seq(*c, g.value(v).name);
    if (!s.ok()) return nullptr;
    Elems e;
    for (size_t i = 0; i < s->items.size(); ++i)
      e.push_back(constant(g.value(v).name + "/" + std::to_string(i), s->items[i]));
    return &(known[v] = std::move(e));
  }

  // A constant scalar position of a sequence of n elements, normalized; nullopt when unknown or
  // out of range (then the host kernel runs and reports it).
  std::optional<size_t> position(const ir::Node& n, size_t k, size_t len, bool allow_end) {
    if (!allow_end && len == 0) return std::nullopt;  // nothing to take: the host kernel reports it
    if (k >= n.inputs.size() || n.inputs[k] == ir::kNoValue) return allow_end ? len : len - 1;
    const Tensor* c = g.constant(n.inputs[k]);
    if (!c) return std::nullopt;
    auto p = ops::scalar_index(n, *c, "position");
    if (!p.ok()) return std::nullopt;
    const int64_t l = static_cast<int64_t>(len), hi = allow_end ? l : l - 1;
    if (*p < -l || *p > hi) return std::nullopt;
    return static_cast<size_t>(*p < 0 ? *p + l : *p);
  }

  // Traces node `n`, and rewrites it into a tensor op where it reads a traced sequence (the
  // sequence producers stay until dead-code removal).
  void visit(ir::Node& n) {
    if (!n.domain.empty()) return;
    const std::string& op = n.op_type;
    const ir::ValueId out = n.outputs[0];
    if (op == "SequenceEmpty") {
      known[out] = {};
    } else if (op == "SequenceConstruct") {
      for (ir::ValueId in : n.inputs)
        if (in == ir::kNoValue) return;
      known[out] = n.inputs;
    } else if (op == "SequenceInsert" || op == "SequenceErase") {
      const Elems* e = elems(n.inputs[0]);
      const bool insert = op == "SequenceInsert";
      if (!e || (insert && (n.inputs.size() < 2 || n.inputs[1] == ir::kNoValue))) return;
      auto at = position(n, insert ? 2 : 1, e->size(), insert);
      if (!at) return;
      Elems r = *e;
      if (insert) r.insert(r.begin() + static_cast<std::ptrdiff_t>(*at), n.inputs[1]);
      else r.erase(r.begin() + static_cast<std::ptrdiff_t>(*at));
      known[out] = std::move(r);
    } else if (op == "Identity" && !g.value(out).seq.is_tensor()) {
      if (const Elems* e = elems(n.inputs[0])) known[out] = Elems(*e);
    } else if (op == "SplitToSequence") {
      split(n);
    } else if (op == "SequenceAt") {
      const Elems* e = elems(n.inputs[0]);
      if (!e || n.inputs.size() < 2 || n.inputs[1] == ir::kNoValue || e->empty()) return;
      auto at = position(n, 1, e->size(), false);
      if (!at) return;
      rewrite(n, "Identity", {(*e)[*at]}, {});
    } else if (op == "SequenceLength") {
      const Elems* e = elems(n.inputs[0]);
      if (!e) return;
      rewrite(n, "Identity", {i64s(n.name + "/length", {static_cast<int64_t>(e->size())}, true)}, {});
    } else if (op == "ConcatFromSequence") {
      concat(n);
    }
  }

  void rewrite(ir::Node& n, const std::string& op, Elems ins, std::map<std::string, ir::Attribute> attrs) {
    n.op_type = op;
    n.opset = 13;
    n.inputs = std::move(ins);
    n.attrs = std::move(attrs);
    ++changed;
  }

  void concat(ir::Node& n) {
    const Elems* e = elems(n.inputs[0]);
    if (!e || e->empty()) return;  // an empty one: the host kernel reports it
    auto axis = n.attr_int("axis");
    auto new_axis = n.attr_int("new_axis", 0);
    if (!axis.ok() || !new_axis.ok() || (*new_axis != 0 && *new_axis != 1)) return;
    Elems parts = *e;
    if (*new_axis == 1) {
      // Unsqueeze and Concat both count a negative axis from the end of the output's rank r + 1.
      const ir::ValueId axes = i64s(n.name + "/axes", {*axis});
      for (ir::ValueId& p : parts) p = add_node(n.name + "/unsqueeze", "Unsqueeze", {p, axes}, g.value(p).name + "/unsqueezed");
    }
    rewrite(n, "Concat", std::move(parts), {{"axis", ir::Attribute::make_int(*axis)}});
  }

  // SplitToSequence of a known piece count: Split (and Squeeze) nodes; the elements are their outputs.
  void split(const ir::Node& n) {
    const ir::Value& x = g.value(n.inputs[0]);
    auto axis_attr = n.attr_int("axis", 0);
    auto keepdims = n.attr_int("keepdims", 1);
    if (!axis_attr.ok() || !keepdims.ok() || !x.has_shape || x.dims.empty()) return;
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    const int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
    if (axis < 0 || axis >= rank || x.dims[axis] < 0) return;
    const int64_t dim = x.dims[axis];
    const bool has_split = n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue;
    std::vector<int64_t> lens;
    if (!has_split) {
      lens.assign(static_cast<size_t>(dim), 1);
    } else {
      const Tensor* c = g.constant(n.inputs[1]);
      if (!c) return;
      auto v = c->to_int64_vector();
      if (!v.ok()) return;
      if (c->dims().empty()) {
        if ((*v)[0] <= 0) return;
        for (int64_t at = 0; at < dim; at += (*v)[0]) lens.push_back(std::min((*v)[0], dim - at));
      } else {
        int64_t sum = 0;
        for (int64_t l : *v) {
          if (l < 0) return;
          sum += l;
        }
        if (sum != dim) return;
        lens = *v;
      }
    }
    if (lens.empty() || lens.size() > 4096) return;  // an empty sequence or a huge fan-out: left to the host
    ir::Node s;
    s.name = fresh(n.name + "/split");
    s.op_type = "Split";
    s.opset = 13;
    s.inputs = {n.inputs[0], i64s(n.name + "/split_lengths", lens)};
    s.attrs["axis"] = ir::Attribute::make_int(axis);
    Elems pieces;
    for (size_t i = 0; i < lens.size(); ++i) pieces.push_back(g.add_value(fresh(g.value(n.outputs[0]).name + "/" + std::to_string(i))));
    s.outputs = pieces;
    added.push_back(std::move(s));
    // keepdims = 0 squeezes pieces of an omitted split or of the scalar 1 (ops/sequence_split_concat.cc).
    const bool ones = !has_split || (g.constant(n.inputs[1])->dims().empty() && lens.size() == static_cast<size_t>(dim) &&
                                     std::all_of(lens.begin(), lens.end(), [](int64_t l) { return l == 1; }));
    if (ones && *keepdims == 0) {
      const ir::ValueId axes = i64s(n.name + "/axes", {axis});
      for (ir::ValueId& p : pieces) p = add_node(n.name + "/squeeze", "Squeeze", {p, axes}, g.value(p).name + "/squeezed");
    }
    known[n.outputs[0]] = std::move(pieces);
  }
};

}  // namespace

Result<size_t> fold_sequences(ir::Graph& g) {
  Folder f{g};
  for (ir::Node& n : g.nodes)
    if (!n.outputs.empty() && n.outputs[0] != ir::kNoValue) f.visit(n);
  if (f.changed == 0) return size_t{0};  // traced, nothing read: the added nodes would be dead
  for (ir::Node& n : f.added) g.nodes.push_back(std::move(n));
  SRT_RETURN_IF_ERROR(g.topo_sort());
  return f.changed;
}

}  // namespace streamrt::builder
