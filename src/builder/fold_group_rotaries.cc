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
// which is what the group computes. Dims must be known (static builds); dynamic ones keep the
// Rotary step. Both parts of a pair must fold into one group, which must run after the tables are
// made. Runs after pair_rotaries (builder.cc).
#include <numeric>

#include "builder/fusion.h"
#include "ops/matmul_group.h"
#include "ops/rotary.h"

namespace streamrt::builder {
namespace {

bool known(const ir::Value& v) {
  return v.has_shape && !v.dims.empty() && std::all_of(v.dims.begin(), v.dims.end(), [](int64_t d) { return d >= 0; });
}

int64_t product(const Dims& d, size_t from, size_t to) {
  return std::accumulate(d.begin() + static_cast<long>(from), d.begin() + static_cast<long>(to), int64_t{1},
                         std::multiplies<>());
}

// True when cos / sin of dims `c` broadcast over the view `v` ([rows.., heads.., D], heads from
// axis `head`) as one table row per view row: 1 along the heads, leading 1s, then the view's dims.
bool row_tables(const Dims& c, const Dims& v, size_t head) {
  if (c.size() > v.size() || c.back() != v.back()) return false;
  Dims p(v.size() - c.size(), 1);
  p.insert(p.end(), c.begin(), c.end());
  for (size_t j = head; j + 1 < v.size(); ++j)
    if (p[j] != 1) return false;
  size_t q = 0;
  while (q < head && p[q] == 1) ++q;
  for (size_t j = q; j < head; ++j)
    if (p[j] != v[j]) return false;
  return true;
}

struct Part {
  int group = -1, view = -1;
  size_t product = 0;  // which of the group's outputs
  int64_t d = 0;
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
  if (!known(pv) || !known(xv) || !known(cv) || !sv.has_shape || sv.dims != cv.dims || xv.dims.size() < 2) return std::nullopt;
  if (cv.dtype != pv.dtype || sv.dtype != pv.dtype) return std::nullopt;
  part.d = xv.dims.back();
  const int64_t n = pv.dims.back();
  if (part.d <= 0 || part.d % 2 != 0 || n % part.d != 0) return std::nullopt;
  // The heads: the shortest run of the view's axes before D whose product is N / D.
  size_t head = xv.dims.size() - 1;
  int64_t heads = 1;
  while (head > 0 && heads < n / part.d) heads *= xv.dims[--head];
  if (heads != n / part.d || product(xv.dims, 0, head) * n != product(pv.dims, 0, pv.dims.size())) return std::nullopt;
  if (!row_tables(cv.dims, xv.dims, head)) return std::nullopt;
  // The tables exist before the group runs.
  for (ir::ValueId t : {cos, sin})
    if (idx.producer(t) > part.group) return std::nullopt;
  return part;
}

}  // namespace

size_t fold_group_rotaries(ir::Graph& g) {
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
