// Common-subexpression elimination (see passes.h).
//
// One pass in topological order reaches the fixed point: a node's inputs are already replaced by
// their canonical values when its key is taken, so duplicates of duplicates merge as they come.
// Keys are hashed (op, domain, opset, attributes, inputs, which outputs are used), and a hash hit
// is confirmed by comparing the nodes, so the pass is linear in the graph. What makes two values
// the same besides being one value:
//   - small integer / bool constants (axes, shape pieces, indices) with equal contents, which
//     exporters write once per use;
//   - Shape(x) and Shape(y) of tensors whose dims DimTracer proves equal one by one (each layer
//     reads its own activation's shape; the values are the same at every input shape).
// Commutative binary ops compare their inputs as a set. Random ops and nodes with subgraphs never
// merge; a node whose output is a graph output stays.
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "builder/dim_tracer.h"
#include "builder/passes.h"
#include "ops/op.h"

namespace streamrt::builder {
namespace {

// Constants up to this many elements are compared by contents.
constexpr int64_t kMaxSharedConstant = 64;

size_t mix(size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

size_t hash_bytes(const void* p, size_t n) { return std::hash<std::string_view>{}({static_cast<const char*>(p), n}); }

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

size_t hash_tensor(const Tensor& t) {
  size_t h = mix(static_cast<size_t>(t.dtype()), t.dims().size());
  for (int64_t d : t.dims()) h = mix(h, static_cast<size_t>(d));
  return mix(h, hash_bytes(t.data(), t.nbytes()));
}

bool same_attr(const ir::Attribute& a, const ir::Attribute& b) {
  using K = ir::Attribute::Kind;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::kInt: return a.i == b.i;
    case K::kFloat: return std::memcmp(&a.f, &b.f, sizeof(float)) == 0;
    case K::kString: return a.s == b.s;
    case K::kInts: return a.ints == b.ints;
    case K::kFloats:
      return a.floats.size() == b.floats.size() &&
             (a.floats.empty() || std::memcmp(a.floats.data(), b.floats.data(), a.floats.size() * sizeof(float)) == 0);
    case K::kStrings: return a.strings == b.strings;
    case K::kTensor: return same_tensor(a.t, b.t);
    case K::kGraph: return false;
  }
  return false;
}

size_t hash_attr(const ir::Attribute& a) {
  using K = ir::Attribute::Kind;
  size_t h = static_cast<size_t>(a.kind);
  switch (a.kind) {
    case K::kInt: return mix(h, static_cast<size_t>(a.i));
    case K::kFloat: return mix(h, hash_bytes(&a.f, sizeof(float)));
    case K::kString: return mix(h, std::hash<std::string>{}(a.s));
    case K::kInts: return mix(h, hash_bytes(a.ints.data(), a.ints.size() * sizeof(int64_t)));
    case K::kFloats: return mix(h, hash_bytes(a.floats.data(), a.floats.size() * sizeof(float)));
    case K::kStrings:
      for (const auto& s : a.strings) h = mix(h, std::hash<std::string>{}(s));
      return h;
    case K::kTensor: return mix(h, hash_tensor(a.t));
    case K::kGraph: return h;
  }
  return h;
}

bool commutative(const ir::Node& n) {
  static const std::unordered_set<std::string> ops = {"Add", "Mul", "And", "Or", "Xor", "Equal", "Max", "Min", "Sum"};
  return n.domain.empty() && n.inputs.size() == 2 && ops.count(n.op_type);
}

// What identifies a node's computation: its inputs as canonical values (commutative: sorted) and,
// for Shape, the traced dims that stand for its input.
struct Key {
  std::vector<ir::ValueId> inputs;
  std::vector<SymDim> shape_dims;
  bool by_dims = false;
};

class Cse {
 public:
  explicit Cse(ir::Graph& g) : g_(g), idx_(g), tr_(g, idx_), canon_(g.values.size()) {
    for (size_t v = 0; v < canon_.size(); ++v) canon_[v] = static_cast<ir::ValueId>(v);
    for (ir::ValueId o : g.outputs) graph_outputs_.insert(o);
  }

  size_t run() {
    std::unordered_map<size_t, std::vector<size_t>> seen;  // key hash -> kept nodes
    std::vector<Key> keys(g_.nodes.size());
    size_t merged = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      ir::Node& n = g_.nodes[i];
      for (ir::ValueId& in : n.inputs)
        if (in != ir::kNoValue) in = value(in);
      if (!mergeable(n)) continue;
      keys[i] = key_of(n);
      const size_t h = hash(n, keys[i]);
      auto& bucket = seen[h];
      bool dup = false;
      for (size_t j : bucket) {
        if (!same(g_.nodes[j], keys[j], n, keys[i])) continue;
        for (size_t o = 0; o < n.outputs.size(); ++o)
          if (n.outputs[o] != ir::kNoValue) canon_[n.outputs[o]] = g_.nodes[j].outputs[o];
        idx_.remove(static_cast<int>(i));
        dup = true;
        ++merged;
        break;
      }
      if (!dup) bucket.push_back(i);
    }
    idx_.compact();
    return merged;
  }

 private:
  ir::ValueId value(ir::ValueId v) {
    v = canon_[v];
    const Tensor* t = g_.constant(v);
    if (!t || t->numel() > kMaxSharedConstant || !(is_integer(t->dtype()) || t->dtype() == DataType::kBool)) return v;
    auto& bucket = constants_[hash_tensor(*t)];
    for (ir::ValueId c : bucket)
      if (same_tensor(*g_.constant(c), *t)) return canon_[v] = c;
    bucket.push_back(v);
    return v;
  }

  bool mergeable(const ir::Node& n) const {
    const ops::OpSchema* s = ops::schema_of(n);
    if (!s || s->nondeterministic || n.outputs.empty()) return false;
    for (const auto& [k, a] : n.attrs)
      if (a.kind == ir::Attribute::Kind::kGraph) return false;
    for (ir::ValueId o : n.outputs)
      if (o != ir::kNoValue && graph_outputs_.count(o)) return false;
    return true;
  }

  Key key_of(const ir::Node& n) {
    Key k;
    k.inputs = n.inputs;
    if (commutative(n) && k.inputs[1] < k.inputs[0]) std::swap(k.inputs[0], k.inputs[1]);
    if (n.op_type == "Shape" && n.domain.empty() && n.inputs.size() == 1 && rank_of(g_, n.inputs[0]) > 0) {
      const int64_t r = static_cast<int64_t>(rank_of(g_, n.inputs[0]));
      k.by_dims = true;
      for (int64_t a = 0; a < r && k.by_dims; ++a) {
        auto d = tr_.dim(n.inputs[0], a);
        if (d) k.shape_dims.push_back(*d);
        else k.by_dims = false;
      }
      if (!k.by_dims) k.shape_dims.clear();
    }
    return k;
  }

  size_t hash(const ir::Node& n, const Key& k) const {
    size_t h = mix(std::hash<std::string>{}(n.op_type), std::hash<std::string>{}(n.domain));
    h = mix(h, static_cast<size_t>(n.opset));
    for (const auto& [name, a] : n.attrs) h = mix(mix(h, std::hash<std::string>{}(name)), hash_attr(a));
    for (ir::ValueId o : n.outputs) h = mix(h, o == ir::kNoValue);
    if (k.by_dims) {
      for (const SymDim& d : k.shape_dims)
        for (int64_t x : {static_cast<int64_t>(d.root), d.n, d.cap, d.plus}) h = mix(h, static_cast<size_t>(x));
      return mix(h, 1);
    }
    for (ir::ValueId in : k.inputs) h = mix(h, static_cast<size_t>(in));
    return h;
  }

  static bool same(const ir::Node& a, const Key& ka, const ir::Node& b, const Key& kb) {
    if (a.op_type != b.op_type || a.domain != b.domain || a.opset != b.opset || a.outputs.size() != b.outputs.size() ||
        a.attrs.size() != b.attrs.size() || ka.by_dims != kb.by_dims)
      return false;
    for (size_t o = 0; o < a.outputs.size(); ++o)
      if ((a.outputs[o] == ir::kNoValue) != (b.outputs[o] == ir::kNoValue)) return false;
    for (auto ia = a.attrs.begin(), ib = b.attrs.begin(); ia != a.attrs.end(); ++ia, ++ib)
      if (ia->first != ib->first || !same_attr(ia->second, ib->second)) return false;
    return ka.by_dims ? ka.shape_dims == kb.shape_dims : ka.inputs == kb.inputs;
  }

  ir::Graph& g_;
  GraphIndex idx_;
  DimTracer tr_;
  std::vector<ir::ValueId> canon_;
  std::unordered_set<ir::ValueId> graph_outputs_;
  std::unordered_map<size_t, std::vector<ir::ValueId>> constants_;
};

}  // namespace

size_t eliminate_common_subexpressions(ir::Graph& g) {
  const size_t merged = Cse(g).run();
  if (merged) remove_dead_code(g);
  return merged;
}

}  // namespace streamrt::builder
