#include "builder/import_quantized.h"

#include <cstring>
#include <map>
#include <optional>

#include "builder/weight_matmul.h"
#include "ops/matmul_nbits.h"
#include "ops/op.h"

namespace streamrt::builder {
namespace {

// The producer of each value, and constants before folding: initializers and Constant nodes.
struct Producers {
  const ir::Graph& g;
  std::vector<int> of;

  explicit Producers(const ir::Graph& graph) : g(graph), of(graph.values.size(), -1) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ir::ValueId o : g.nodes[i].outputs)
        if (o != ir::kNoValue) of[o] = static_cast<int>(i);
  }
  const ir::Node* node(ir::ValueId v, const char* op) const {
    if (v == ir::kNoValue || static_cast<size_t>(v) >= of.size() || of[v] < 0) return nullptr;
    const ir::Node& n = g.nodes[of[v]];
    return n.op_type == op && n.domain.empty() ? &n : nullptr;
  }
  std::optional<Tensor> constant(ir::ValueId v) const {
    if (v == ir::kNoValue) return std::nullopt;
    if (const Tensor* t = g.constant(v)) return *t;
    if (const ir::Node* c = node(v, "Constant"); c && c->has_attr("value"))
      if (auto t = c->attr_tensor("value"); t.ok()) return std::move(t).value();
    return std::nullopt;
  }
};

std::string unique_name(const ir::Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 2; g.find_value(name) != ir::kNoValue; ++i) name = base + "#" + std::to_string(i);
  return name;
}

// ---- DequantizeLinear ----------------------------------------------------------------------

// How the scales (and zero points) of a dequantized weight map to its channels and K blocks.
enum class Layout { kTensor, kChannel, kBlocked };

// A DequantizeLinear whose output a step reads as its weight: the codes x, [N, K] when `nk`
// (else [K, N]), and their parameters.
struct DqWeight {
  const ir::Node* dq = nullptr;
  Tensor x, scale, zp;  // zp empty: none
  bool nk = false;
  Layout layout = Layout::kTensor;
  int64_t block = 0, k = 0, n = 0;

  int64_t code(int64_t c, int64_t kk) const {
    const int64_t i = nk ? c * k + kk : kk * n + c;
    return x.dtype() == DataType::kInt8 ? x.data_as<int8_t>()[i] : x.data_as<uint8_t>()[i];
  }
  // The parameter index of channel c, K block b.
  int64_t param(int64_t c, int64_t b) const {
    const int64_t blocks = (k + block - 1) / std::max<int64_t>(block, 1);
    switch (layout) {
      case Layout::kTensor: return 0;
      case Layout::kChannel: return c;
      case Layout::kBlocked: return nk ? c * blocks + b : b * n + c;
    }
    return 0;
  }
  int64_t zero(int64_t i) const {
    if (zp.empty()) return 0;
    return zp.dtype() == DataType::kInt8 ? zp.data_as<int8_t>()[i] : zp.data_as<uint8_t>()[i];
  }
  bool is_signed() const { return x.dtype() == DataType::kInt8; }
};

// The DequantizeLinear (through at most one 2-D Transpose) that makes weight `w` of step m, when
// its pattern is one WeightOnlyMatMul can hold; nullopt otherwise.
std::optional<DqWeight> dequantized_weight(const ir::Graph& g, const Producers& p, const WeightMatMul& m) {
  ir::ValueId v = m.weight;
  bool transposed = false;
  if (const ir::Node* t = p.node(v, "Transpose")) {
    auto perm = t->attr_ints("perm", std::vector<int64_t>{1, 0});
    if (!perm.ok() || *perm != std::vector<int64_t>{1, 0} || t->inputs.empty()) return std::nullopt;
    v = t->inputs[0];
    transposed = true;
  }
  const ir::Node* dq = p.node(v, "DequantizeLinear");
  if (!dq || dq->inputs.size() < 2) return std::nullopt;
  DqWeight w;
  w.dq = dq;
  auto x = p.constant(dq->inputs[0]);
  auto s = p.constant(dq->inputs[1]);
  auto z = dq->inputs.size() > 2 ? p.constant(dq->inputs[2]) : std::nullopt;
  if (!x || !s || (dq->inputs.size() > 2 && dq->inputs[2] != ir::kNoValue && !z)) return std::nullopt;
  const DataType a = g.value(g.nodes[m.node].inputs[0]).dtype;
  if ((x->dtype() != DataType::kInt8 && x->dtype() != DataType::kUInt8) || x->dims().size() != 2 ||
      s->dtype() != a || g.value(dq->outputs[0]).dtype != a || (z && z->dtype() != x->dtype()))
    return std::nullopt;
  w.x = *x;
  w.scale = *s;
  if (z) w.zp = *z;
  w.nk = m.trans != transposed;
  w.k = m.k;
  w.n = m.n;
  if (x->dims() != (w.nk ? Dims{m.n, m.k} : Dims{m.k, m.n})) return std::nullopt;
  const int64_t channel_axis = w.nk ? 0 : 1;
  auto axis = dq->attr_int("axis", 1);
  auto block = dq->attr_int("block_size", 0);
  if (!axis.ok() || !block.ok()) return std::nullopt;
  const int64_t ax = *axis < 0 ? *axis + 2 : *axis;
  if (z && z->numel() != s->numel()) return std::nullopt;
  if (s->numel() == 1) {
    w.layout = Layout::kTensor;
  } else if (*block == 0 && ax == channel_axis && s->dims() == Dims{m.n}) {
    w.layout = Layout::kChannel;
  } else if (*block > 0 && ax == 1 - channel_axis && ops::valid_weight_quant_group(*block)) {
    const int64_t blocks = (m.k + *block - 1) / *block;
    if (s->dims() != (w.nk ? Dims{m.n, blocks} : Dims{blocks, m.n})) return std::nullopt;
    w.layout = Layout::kBlocked;
    w.block = *block;
  } else {
    return std::nullopt;
  }
  return w;
}

// Whether every code and zero point fits 4 bits (int4: -8..7, uint4: 0..15).
bool fits_4_bits(const DqWeight& w) {
  const int64_t lo = w.is_signed() ? -8 : 0, hi = lo + 15;
  auto in = [&](const Tensor& t) {
    if (t.empty()) return true;
    for (int64_t i = 0, n = t.numel(); i < n; ++i) {
      const int64_t v = t.dtype() == DataType::kInt8 ? t.data_as<int8_t>()[i] : t.data_as<uint8_t>()[i];
      if (v < lo || v > hi) return false;
    }
    return true;
  };
  return in(w.x) && in(w.zp);
}

// A group for per-tensor / per-channel 4-bit codes (the scales repeat in every group): the power
// of two that stores a row of K in the fewest bytes (codes and padding plus a scale and a zero
// point per group).
int64_t row_group(int64_t k, size_t scale_bytes) {
  int64_t best = 16, best_bytes = INT64_MAX;
  for (int64_t group = 16; group <= ops::kMaxAttrExtent; group *= 2) {
    const int64_t groups = (k + group - 1) / group;
    const int64_t bytes = groups * group / 2 + groups * static_cast<int64_t>(scale_bytes + 1);
    if (bytes < best_bytes) best = group, best_bytes = bytes;
    if (group >= k) break;
  }
  return best;
}

// The codes in WeightOnlyMatMul's layout (ops/weight_quant.h), scales copied bit for bit.
Result<ops::QuantizedWeight> repack(const DqWeight& w, const ops::WeightQuantFormat& f) {
  ops::QuantizedWeight q;
  const size_t sb = dtype_size(w.scale.dtype());
  const auto* s = static_cast<const uint8_t*>(w.scale.data());
  SRT_ASSIGN_OR_RETURN(q.packed, Tensor::allocate(f.packed_dtype(), f.packed_dims()));
  SRT_ASSIGN_OR_RETURN(q.scales, Tensor::allocate(w.scale.dtype(), f.scale_dims()));
  auto* so = static_cast<uint8_t*>(q.scales.mutable_data());
  const int64_t groups = f.groups();
  for (int64_t c = 0; c < f.n; ++c)
    for (int64_t g = 0; g < groups; ++g)
      std::memcpy(so + (c * groups + g) * sb, s + w.param(c, g) * sb, sb);  // blocked: group = block
  if (f.bits == 4) {
    const int64_t offset = w.is_signed() ? 8 : 0, row = f.row_bytes();
    SRT_ASSIGN_OR_RETURN(q.zeros, Tensor::allocate(DataType::kUInt8, f.zero_dims()));
    auto* packed = q.packed.mutable_data_as<uint8_t>();
    auto* zeros = q.zeros.mutable_data_as<uint8_t>();
    for (int64_t c = 0; c < f.n; ++c) {
      for (int64_t g = 0; g < groups; ++g) zeros[c * groups + g] = static_cast<uint8_t>(w.zero(w.param(c, g)) + offset);
      for (int64_t kk = 0; kk < f.k; ++kk)
        packed[c * row + kk / 2] |= static_cast<uint8_t>((w.code(c, kk) + offset) << (kk % 2 ? 4 : 0));
    }
    return q;
  }
  const int64_t offset = w.is_signed() ? 0 : -128;
  auto* codes = q.packed.mutable_data_as<int8_t>();
  for (int64_t c = 0; c < f.n; ++c)
    for (int64_t kk = 0; kk < f.k; ++kk) codes[c * f.k + kk] = static_cast<int8_t>(w.code(c, kk) + offset);
  bool any_zero_point = false;
  for (int64_t c = 0; c < f.n; ++c) any_zero_point = any_zero_point || w.zero(w.param(c, 0)) + offset != 0;
  if (any_zero_point) {
    SRT_ASSIGN_OR_RETURN(q.zeros, Tensor::allocate(DataType::kInt8, f.zero_dims()));
    auto* zeros = q.zeros.mutable_data_as<int8_t>();
    for (int64_t c = 0; c < f.n; ++c) zeros[c] = static_cast<int8_t>(w.zero(w.param(c, 0)) + offset);
  }
  return q;
}

// Nullopt when the codes do not fit any format (blocked codes beyond 4 bits).
Result<std::optional<ops::QuantizedWeight>> pack_dequantized(const DqWeight& w, ops::WeightQuantFormat& f) {
  const bool four = fits_4_bits(w);
  if (w.layout == Layout::kBlocked && !four) return std::optional<ops::QuantizedWeight>{};
  f.k = w.k;
  f.n = w.n;
  f.bits = four ? 4 : 8;
  f.group = !four ? 0 : w.layout == Layout::kBlocked ? w.block : row_group(w.k, dtype_size(w.scale.dtype()));
  SRT_ASSIGN_OR_RETURN(ops::QuantizedWeight q, repack(w, f));
  return std::optional<ops::QuantizedWeight>(std::move(q));
}

// `base` by value: it is often a value's name, and adding values moves them.
WeightOnlyInputs add_weights(ir::Graph& g, const std::string base, ops::QuantizedWeight q,
                             const ops::WeightQuantFormat& f) {
  WeightOnlyInputs in;
  in.fmt = f;
  in.packed = add_constant(g, unique_name(g, base + "::q"), std::move(q.packed));
  in.scales = add_constant(g, unique_name(g, base + "::scales"), std::move(q.scales));
  if (!q.zeros.empty()) in.zeros = add_constant(g, unique_name(g, base + "::zeros"), std::move(q.zeros));
  return in;
}

void rewrite(ir::Graph& g, const WeightMatMul& m, const WeightOnlyInputs& in, const std::string codes) {
  make_weight_only_matmul(g, m, in);
  g.nodes[m.node].attrs["__prequantized"] = ir::Attribute::make_string(codes);
}

// ---- MatMulNBits ---------------------------------------------------------------------------

Status rewrite_nbits(ir::Graph& g, const Producers& p, size_t i) {
  const ir::Node& n = g.nodes[i];
  SRT_ASSIGN_OR_RETURN(ops::WeightQuantFormat f, ops::matmul_nbits_format(n));
  auto input = [&](int k) { return static_cast<size_t>(k) < n.inputs.size() ? n.inputs[k] : ir::kNoValue; };
  std::optional<Tensor> t[ops::kNBitsBias];
  for (int k = ops::kNBitsB; k < ops::kNBitsBias; ++k) {
    if (input(k) == ir::kNoValue) continue;
    t[k] = p.constant(input(k));
    if (!t[k])
      return n.error(StatusCode::kUnsupported,
                     "input " + std::to_string(k) + " ('" + g.value(input(k)).name +
                         "') is computed in the graph; streamrt reads MatMulNBits' B, scales, zero_points and g_idx "
                         "as compressed weights and needs them as constants (initializers)");
  }
  if (input(ops::kNBitsA) == ir::kNoValue || !t[ops::kNBitsB] || !t[ops::kNBitsScales])
    return n.error(StatusCode::kInvalidModel, "needs A, B and scales");
  const DataType a = g.value(input(ops::kNBitsA)).dtype;
  auto opt = [&](int k) { return t[k] ? &*t[k] : nullptr; };
  SRT_ASSIGN_OR_RETURN(ops::QuantizedWeight q,
                       ops::matmul_nbits_weights(n, f, a, *t[ops::kNBitsB], *t[ops::kNBitsScales],
                                                 opt(ops::kNBitsZeros), opt(ops::kNBitsGIdx)));
  const std::string codes = g.value(input(ops::kNBitsB)).name;
  const WeightMatMul m{i, input(ops::kNBitsB), input(ops::kNBitsBias), true, f.k, f.n};
  const WeightOnlyInputs in = add_weights(g, codes, std::move(q), f);
  rewrite(g, m, in, codes);
  return ok_status();
}

}  // namespace

Result<size_t> import_quantized_weights(ir::Graph& g) {
  const Producers p(g);
  size_t rewritten = 0;
  // One packed copy per DequantizeLinear and orientation, however many steps read it.
  std::map<std::pair<const ir::Node*, bool>, WeightOnlyInputs> packed;
  std::vector<std::pair<WeightMatMul, std::pair<const ir::Node*, bool>>> todo;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.op_type == ops::kMatMulNBits && n.domain == ops::kMicrosoftDomain) {
      SRT_RETURN_IF_ERROR(rewrite_nbits(g, p, i));
      ++rewritten;
      continue;
    }
    auto m = weight_matmul(g, i);
    if (!m) continue;
    std::optional<DqWeight> w = dequantized_weight(g, p, *m);
    if (!w) continue;
    const auto key = std::make_pair(w->dq, w->nk);
    if (!packed.count(key)) {
      ops::WeightQuantFormat f;
      SRT_ASSIGN_OR_RETURN(std::optional<ops::QuantizedWeight> q, pack_dequantized(*w, f));
      if (!q) continue;
      packed[key] = add_weights(g, g.value(w->dq->inputs[0]).name, std::move(*q), f);
    }
    todo.push_back({*m, key});
  }
  // Rewritten last: the DequantizeLinear nodes the keys point at stay where they are until then.
  for (const auto& [m, key] : todo) {
    rewrite(g, m, packed.at(key), g.value(key.first->inputs[0]).name);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace streamrt::builder
