// Attention masks as exporters build them, read symbolically (fold_attention_masks.cc uses it).
//
// transformers' exports compute each layer's [B, 1, Sq, Skv] mask from attention_mask and index
// tensors: aranges of the batch, query and key positions broadcast against each other
// (Unsqueeze / Expand / Reshape), compared (kv_idx <= q_idx, kv_idx > q_idx - window), and
// attention_mask[b, kv_idx] gathered (GatherND over stacked indices, or Gather from the flattened
// mask at b * S + kv_idx). MaskForms describes every element of such a tensor as a function of its
// own indices x_0, x_1, ...: an integer tensor as an affine form c + sum_a coef_a * x_a, whose
// constant and coefficients may hold traced dims (a KV cache's past length, the mask's row length),
// and a bool tensor as a conjunction of atoms "affine <= 0" and "src[row, col] != 0". A form holds
// at every input shape where the graph runs: each step is proven with DimTracer (broadcast axes
// equal or static 1) or with the constants' values; where a step cannot be proven there is no form.
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "builder/dim_tracer.h"

namespace streamrt::builder {

// c + sum of traced dims with integer coefficients. A symbol is a SymDim without its addend.
struct Lin {
  using Symbol = std::tuple<ir::ValueId, int64_t, int64_t>;  // root, axis, cap
  int64_t c = 0;
  std::map<Symbol, int64_t> s;  // no zero coefficients

  static Lin of(int64_t v) { return Lin{v, {}}; }
  static Lin of(const SymDim& d);
  bool is_static() const { return s.empty(); }
  bool is(int64_t v) const { return s.empty() && c == v; }
  bool operator==(const Lin&) const = default;
};

// a + k * b, a * b (one of them static); nullopt on int64 overflow or two symbolic factors.
std::optional<Lin> lin_add(const Lin& a, const Lin& b, int64_t k = 1);
std::optional<Lin> lin_mul(const Lin& a, const Lin& b);

// c + sum_a x[a] * index_a.
struct Affine {
  Lin c;
  std::map<int, Lin> x;  // axis -> coefficient, no zero ones
  bool operator==(const Affine&) const = default;
};

// src[row, col] of a rank-2 tensor, as an index expression of the reading tensor's axes.
struct KeyRead {
  ir::ValueId src = ir::kNoValue;
  Affine row, col;
  bool operator==(const KeyRead&) const = default;
};

struct MaskForm {
  enum class Kind { kInt, kBool, kGathered };
  Kind kind = Kind::kInt;
  Affine value;               // kInt: the element
  std::vector<Affine> le;     // kBool: true where every d <= 0 ...
  std::vector<KeyRead> keys;  // ... and every src[row, col] is nonzero
  KeyRead read;               // kGathered: nonzero exactly where src[row, col] is
};

// Axis renumbering: to[a] is the new axis of old axis a, or -1 where the old axis is indexed at 0
// (a broadcast or removed size-1 axis). Applied to every affine form of `f`.
MaskForm remap(const MaskForm& f, const std::vector<int>& to);
Affine remap(const Affine& a, const std::vector<int>& to);

class MaskForms {
 public:
  MaskForms(const ir::Graph& g, const GraphIndex& idx, DimTracer& tr) : g_(g), idx_(idx), tr_(tr) {}

  // The form of v's elements over v's own axes; nullopt when not proven.
  std::optional<MaskForm> form(ir::ValueId v);

  // For a broadcasting op: how operand `in`'s axes land on output `out`'s (right-aligned), when
  // each is static 1 or provably equal to the output's.
  std::optional<std::vector<int>> broadcast_map(ir::ValueId in, ir::ValueId out);

 private:
  std::optional<MaskForm> compute(ir::ValueId v);
  std::optional<MaskForm> view(ir::ValueId v);
  std::optional<std::vector<int>> view_map(ir::ValueId in, ir::ValueId out);
  std::optional<MaskForm> mapped(ir::ValueId in, ir::ValueId out);
  std::optional<MaskForm> range(const ir::Node& n);
  std::optional<MaskForm> cast(const ir::Node& n);
  std::optional<MaskForm> arith(const ir::Node& n);
  std::optional<MaskForm> compare(const ir::Node& n);
  std::optional<MaskForm> conjunction(const ir::Node& n);
  std::optional<MaskForm> gather_nd(const ir::Node& n);
  std::optional<MaskForm> gather_flat(const ir::Node& n);
  std::optional<Affine> index_component(ir::ValueId ind, int64_t k);
  std::optional<MaskForm> as_bool(ir::ValueId v, std::optional<MaskForm> f);

  static constexpr int kMaxDepth = 64;
  const ir::Graph& g_;
  const GraphIndex& idx_;
  DimTracer& tr_;
  std::map<ir::ValueId, std::optional<MaskForm>> memo_;
  int depth_ = 0;
};

}  // namespace streamrt::builder
