// Folding: a layer's Rotary step (single or paired: Q and K, pair_rotaries.cc) into the MatMulGroup
// whose products it rotates (ops/matmul_group.h, inputs 8..11). The export's chain
//   MatMulGroup -> P_i [.., N] -> Reshape (a view) -> [.., heads, D] -> Rotary(cos, sin) -> Y
// becomes MatMulGroup (rotating P_i) -> Reshape -> Y: the group GEMM rotates in its epilogue, while
// each head is still in registers (kernels/group_gemm.cu), and the other paths rotate the products
// in place after their GEMMs; a launch and the products' round trip through memory go.
//
// The fold holds where the view keeps P's rows (the axes before the heads are P's rows, row-major:
// [B, S, H, D] as Q reads it, [B, H, 1, D] as a one-token K cache reads it) and the Rotary's
// broadcast of cos / sin reads one table row per P row — the tables broadcast along the heads and
// along leading row axes only, so that P's row r reads table row r % T (T = the tables' rows) —
// which is what the group computes (row_tables says which tables hold that in dynamic builds too;
// the group checks at run time that T divides the rows). Both parts of a pair must fold into one
// group, which must run after the tables are made (hoist_tables moves them up where it can). Runs
// after pair_rotaries (builder.cc).
#include <algorithm>

#include "builder/fusion.h"
#include "ops/matmul_group.h"
#include "ops/rotary.h"

namespace streamrt::builder {
namespace {

// True when cos / sin of dims `c` broadcast over the view `v` ([rows.., heads.., D], heads from
// axis `head`) as table row r % T for the view's row r (T = the tables' elements / D): 1 along the
// heads; along the row axes that are not 1, leading 1s and then the view's own dims. A table dim
// unknown at build time (a dynamic build) is taken only as the tables' one row axis that is not 1,
// the last: T is then that axis of the view (the positions, or the batch of a one-token step) or 1,
// and either reads the right row.
bool row_tables(const Dims& c, const Dims& v, size_t head) {
  if (c.empty() || c.size() > v.size() || c.back() != v.back()) return false;
  Dims p(v.size() - c.size(), 1);
  p.insert(p.end(), c.begin(), c.end());
  for (size_t j = head; j + 1 < v.size(); ++j)
    if (p[j] != 1 && p[j] != -1) return false;  // unknown there: 1 at run time (the Rotary's broadcast)
  std::vector<size_t> rows;                      // the view's row axes that may be larger than 1
  for (size_t j = 0; j < head; ++j)
    if (v[j] != 1) rows.push_back(j);
  size_t q = 0;
  while (q < rows.size() && p[rows[q]] == 1) ++q;
  for (size_t i = q; i < rows.size(); ++i) {
    const int64_t cj = p[rows[i]], vj = v[rows[i]];
    if (cj >= 0 && vj >= 0 && cj == vj) continue;
    // A table axis of unknown size broadcasts as 1 or the view's axis; a known one over an unknown
    // view axis would hold only at that size (the unfused Rotary refuses others: kept).
    if (cj < 0 && i == q && i + 1 == rows.size()) continue;
    return false;
  }
  return true;
}

struct Part {
  int group = -1, view = -1;
  size_t product = 0;  // which of the group's outputs
  int64_t d = 0;
  int tables_made = -1;  // the last node making cos / sin (-1: inputs or constants)
};

// Part k of Rotary step `r`, when it folds.
std::optional<Part> foldable(const ir::Graph& g, const GraphIndex& idx, int r, size_t k) {
  const ir::Node& rot = g.nodes[static_cast<size_t>(r)];
  const ir::ValueId x = rot.inputs[3 * k], cos = rot.inputs[3 * k + 1], sin = rot.inputs[3 * k + 2];
  Part part;
  part.view = idx.producer_if(x, "Reshape");
  if (part.view < 0 || idx.single_consumer(x) != r) return std::nullopt;
  const ir::ValueId p = g.nodes[static_cast<size_t>(part.view)].inputs[0];
  part.group = idx.producer_if(p, ops::kMatMulGroup);
  if (part.group < 0 || idx.single_consumer(p) != part.view) return std::nullopt;
  const ir::Node& grp = g.nodes[static_cast<size_t>(part.group)];
  auto gate = grp.attr_int("gate", 0);
  if (!grp.domain.empty() || !gate.ok() || *gate != 0) return std::nullopt;
  const auto out = std::find(grp.outputs.begin(), grp.outputs.end(), p);
  part.product = static_cast<size_t>(out - grp.outputs.begin());
  if (part.product >= static_cast<size_t>(ops::kMatMulGroupRotaryMax)) return std::nullopt;
  const size_t table = ops::kMatMulGroupRotary + 2 * part.product;
  if (table < grp.inputs.size() && grp.inputs[table] != ir::kNoValue) return std::nullopt;  // rotated already
  const ir::Value &pv = g.value(p), &xv = g.value(x), &cv = g.value(cos), &sv = g.value(sin);
  if (!pv.has_shape || pv.dims.empty() || !xv.has_shape || xv.dims.size() < 2 || !cv.has_shape || !sv.has_shape ||
      sv.dims != cv.dims || cv.dtype != pv.dtype || sv.dtype != pv.dtype)
    return std::nullopt;
  part.d = xv.dims.back();
  const int64_t n = pv.dims.back();
  if (part.d <= 0 || part.d % 2 != 0 || n <= 0 || n % part.d != 0) return std::nullopt;
  // The heads: the shortest run of the view's axes before D (known dims) whose product is N / D. The
  // axes before them are the product's rows, in order: the Reshape keeps the element count and D
  // times the heads is N.
  size_t head = xv.dims.size() - 1;
  int64_t heads = 1;
  while (head > 0 && heads < n / part.d && xv.dims[head - 1] > 0) heads *= xv.dims[--head];
  if (heads != n / part.d || !row_tables(cv.dims, xv.dims, head)) return std::nullopt;
  part.tables_made = std::max(idx.producer(cos), idx.producer(sin));
  return part;
}

// Moves the nodes that make `tables` from `group` on (and what they read from there on) to just before
// `group`, keeping their order, when they read nothing else made from `group` on: a TorchScript export
// computes layer 0's cos / sin after its projections. Moving producers earlier breaks no reader.
bool hoist_tables(ir::Graph& g, size_t group, const std::vector<ir::ValueId>& tables) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::ValueId v : g.nodes[i].outputs)
      if (v != ir::kNoValue) producer[static_cast<size_t>(v)] = static_cast<int>(i);
  std::vector<bool> slice(g.nodes.size(), false);
  std::vector<ir::ValueId> work = tables;
  while (!work.empty()) {
    const ir::ValueId v = work.back();
    work.pop_back();
    const int p = v == ir::kNoValue ? -1 : producer[static_cast<size_t>(v)];
    if (p < static_cast<int>(group) || slice[static_cast<size_t>(p)]) continue;
    if (p == static_cast<int>(group)) return false;  // the group itself makes them
    const ir::Node& n = g.nodes[static_cast<size_t>(p)];
    if (!n.domain.empty() || n.op_type == "KvAppend") return false;  // only plain ops move: nothing in place
    slice[static_cast<size_t>(p)] = true;
    for (ir::ValueId in : n.inputs) work.push_back(in);
  }
  std::vector<ir::Node> order;
  order.reserve(g.nodes.size());
  for (size_t i = 0; i < group; ++i) order.push_back(std::move(g.nodes[i]));
  for (size_t i = group; i < g.nodes.size(); ++i)
    if (slice[i]) order.push_back(std::move(g.nodes[i]));
  for (size_t i = group; i < g.nodes.size(); ++i)
    if (!slice[i]) order.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(order);
  return true;
}

// Hoists the tables of every Rotary that would fold but for where its tables are made; returns the
// moves made.
size_t hoist_all_tables(ir::Graph& g) {
  size_t moves = 0;
  for (bool again = true; again && moves < g.nodes.size();) {
    again = false;
    GraphIndex idx(g);
    for (size_t r = 0; r < g.nodes.size() && !again; ++r) {
      const ir::Node& rot = g.nodes[r];
      if (rot.op_type != "Rotary" || !rot.domain.empty()) continue;
      const size_t parts = ops::rotary_parts(rot.inputs.size(), rot.outputs.size());
      for (size_t k = 0; k < parts && !again; ++k) {
        std::optional<Part> p = foldable(g, idx, static_cast<int>(r), k);
        if (!p || p->tables_made < p->group) continue;
        again = hoist_tables(g, static_cast<size_t>(p->group), {rot.inputs[3 * k + 1], rot.inputs[3 * k + 2]});
        moves += again;
      }
    }
  }
  return moves;
}

}  // namespace

size_t fold_group_rotaries(ir::Graph& g) {
  hoist_all_tables(g);
  GraphIndex idx(g);
  size_t folded = 0;
  for (size_t r = 0; r < g.nodes.size(); ++r) {
    const ir::Node& rot = g.nodes[r];
    if (idx.removed(r) || rot.op_type != "Rotary" || !rot.domain.empty()) continue;
    const size_t parts = ops::rotary_parts(rot.inputs.size(), rot.outputs.size());
    if (parts == 0) continue;
    std::vector<Part> found;
    for (size_t k = 0; k < parts; ++k) {
      std::optional<Part> p = foldable(g, idx, static_cast<int>(r), k);
      if (!p || (!found.empty() && (p->group != found[0].group || p->d != found[0].d || p->product == found[0].product)))
        break;
      found.push_back(*p);
    }
    if (found.size() != parts || static_cast<size_t>(found[0].group) > r) continue;
    if (std::any_of(found.begin(), found.end(), [](const Part& p) { return p.tables_made > p.group; }))
      continue;  // made after the group: not hoisted
    ir::Node& grp = g.nodes[static_cast<size_t>(found[0].group)];
    auto dim = grp.attr_int("rotary_dim", found[0].d);
    if (!dim.ok() || *dim != found[0].d) continue;  // one D a group
    grp.inputs.resize(ops::kMatMulGroupInputs, ir::kNoValue);
    for (size_t k = 0; k < parts; ++k) {
      const size_t at = ops::kMatMulGroupRotary + 2 * found[k].product;
      grp.inputs[at] = rot.inputs[3 * k + 1];
      grp.inputs[at + 1] = rot.inputs[3 * k + 2];
      g.nodes[static_cast<size_t>(found[k].view)].outputs[0] = rot.outputs[k];  // the view now yields Y
    }
    while (grp.inputs.back() == ir::kNoValue) grp.inputs.pop_back();
    grp.attrs["rotary_dim"] = ir::Attribute::make_int(found[0].d);
    idx.remove(static_cast<int>(r));
    ++folded;
  }
  if (folded > 0) idx.compact();
  return folded;
}

}  // namespace streamrt::builder
