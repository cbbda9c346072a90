// How the warpgroup-MMA attention kernel (attention_wgmma.cu) addresses Q, K and V through TMA: one
// map a tensor, viewed as [slabs][S][row] (`row` elements between consecutive rows; S is Sq for Q,
// Skv for K and V), and a batch index's rows start at (column, slab) of it. That holds when each
// batch index's rows start inside the first row of a slab with D columns to spare, as the bshd
// ([B, S, H, D]: a slab a batch, a head D columns on) and bhsd ([B, H, S, D]: a slab a head)
// layouts of the exports do; then a box never wraps into another head and rows past S fall outside
// the map (read as zeros). Plain C++ for the host, the kernel and the CPU tests
// (tests/unit/attention_kv_slabs_test.cc).
#pragma once

#include <cstdint>

#include "ops/attention.h"

namespace streamrt::cuda::attention {

struct KvStart {
  int64_t col, slab;
};

// Index: the division's type (uint32_t in the Hopper kernel, whose launcher keeps every map's
// elements below 2^31; see AttentionBatchMap::offsets).
template <typename Index = int64_t>
SRT_ATTENTION_HD KvStart kv_start(int64_t offset, int64_t row, int64_t skv) {
  const int64_t slab = static_cast<int64_t>(static_cast<Index>(offset) / static_cast<Index>(row * skv));
  return {offset - slab * row * skv, slab};
}

enum class Operand { kQuery, kKey, kValue };

// The number of slabs the map of `which` needs for batch indices 0 .. batch - 1 (`len`: its rows a
// batch index, Sq or Skv), or 0 when some batch index's rows do not start in a slab's first row
// with d columns left.
inline int64_t kv_slabs(const ops::AttentionBatchMap& map, int64_t batch, int64_t row, int64_t len, int64_t d,
                        Operand which) {
  if (row <= 0 || len <= 0 || d > row) return 0;
  int64_t slabs = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const ops::AttentionBatchMap::Offsets o = map.offsets(b);
    const int64_t at = which == Operand::kQuery ? o.q : which == Operand::kKey ? o.k : o.v;
    const KvStart s = kv_start(at, row, len);
    if (s.col + d > row || s.slab >= INT32_MAX) return 0;
    slabs = s.slab + 1 > slabs ? s.slab + 1 : slabs;
  }
  return slabs;
}

}  // namespace streamrt::cuda::attention
