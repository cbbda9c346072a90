// Dims proven equal without knowing them. With a dynamic batch or sequence length the inferred
// shapes hold -1, so "these two dims are the same size" cannot be read off them; fusions that must
// be exact at every shape (attention masks, grouped K/V, a reshape that is really a transpose) ask
// DimTracer instead. It follows a dim back through ops that provably keep it (given the graph runs
// at all) to a canonical form; equal forms are equal sizes at every input shape.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "builder/fusion.h"

namespace streamrt::builder {

// A static size (root == kNoValue, n = the size), or min(dim n of value `root`, cap) + plus, where
// cap = 0 means no cap (cap comes from Slice(x, 0, E) on an axis of static size cap) and plus is a
// static addend (a KV cache's past length plus the new tokens); or, uncapped, dim n of `root` + dim
// n2 of `root2` + plus (a past length plus a dynamic count of new tokens; the two terms ordered).
struct SymDim {
  ir::ValueId root = ir::kNoValue;
  int64_t n = -1;
  int64_t cap = 0;
  int64_t plus = 0;
  ir::ValueId root2 = ir::kNoValue;
  int64_t n2 = -1;
  bool is_static() const { return root == ir::kNoValue; }
  bool is(int64_t size) const { return is_static() && n == size; }
  bool operator==(const SymDim&) const = default;
};

class DimTracer {
 public:
  DimTracer(const ir::Graph& g, const GraphIndex& idx) : g_(g), idx_(idx) {}

  // Dim `axis` (may be negative) of v; nullopt when v's rank is unknown or axis out of range.
  std::optional<SymDim> dim(ir::ValueId v, int64_t axis);
  // Element k of a 1-D int tensor (k = 0 for a scalar), as a size: from constants, Shape, Gather,
  // Slice, Concat, Unsqueeze, Add of a constant, ... Nullopt when unknown.
  std::optional<SymDim> element(ir::ValueId v, int64_t k);

 private:
  std::optional<SymDim> trace(ir::ValueId v, int64_t axis);
  SymDim named_input_dim(ir::ValueId v, int64_t axis) const;
  std::optional<SymDim> broadcast(const ir::Node& n, int64_t r, int64_t axis);
  static std::optional<SymDim> broadcast_of(std::vector<SymDim> ds);
  std::optional<SymDim> squeeze_family(const ir::Node& n, int64_t r, int64_t axis);
  std::optional<SymDim> expand(const ir::Node& n, int64_t r, int64_t axis);
  std::optional<SymDim> gather_nd(const ir::Node& n, int64_t axis);
  std::optional<SymDim> attention(const ir::Node& n, int64_t r, int64_t axis);
  std::optional<SymDim> reduce(const ir::Node& n, int64_t axis);
  std::optional<SymDim> range(const ir::Node& n);
  std::optional<SymDim> slice(const ir::Node& n, int64_t r, int64_t axis);
  std::optional<SymDim> concat(const ir::Node& n, int64_t axis);
  std::optional<SymDim> inferred_reshape_dim(const ir::Node& n, int64_t axis);
  std::optional<SymDim> slice_element(const ir::Node& n, int64_t k);
  std::optional<SymDim> arith_element(const ir::Node& n, int64_t k);
  std::optional<SymDim> unset_dims_element(const ir::Node& n, int64_t k);

  static constexpr int kMaxDepth = 256;
  const ir::Graph& g_;
  const GraphIndex& idx_;
  std::map<std::pair<ir::ValueId, int64_t>, SymDim> memo_;
  int depth_ = 0;
};

}  // namespace streamrt::builder
