// KV caches stored in place (BuilderConfig::kv_cache_in_place). A decoder exported for generation
// with a cache (transformers / optimum layout) computes each present key / value as
//
//   present = Concat(past, new, axis = sequence)        past: graph input, present: graph output
//
// and reads present only as the K or V of its attention: every step copies the whole cache into
// present. Where a pair has exactly that shape (anything else reading past or present does so only
// for its dims, and every Attention reading one pair reads another of the same capacity as its
// other operand), the Concat becomes KvAppend (ops/kv_append.h) and those Attention steps get
// kv_capacity: past and present are then stored with room for C positions, C being present's
// sequence length at the profile's max, so a caller can bind one buffer to both and each step
// writes only the new rows. Pairs that do not qualify keep their Concat (and stay dense).
#pragma once

#include <unordered_map>

#include "builder/lowering.h"
#include "ir/graph.h"

namespace streamrt::builder {

struct KvCacheInPlace {
  size_t pairs = 0;       // past / present pairs now stored with capacity
  int64_t capacity = 0;   // the largest capacity given
};

// Rewrites the qualifying pairs of `g` (shapes inferred; `profiles` the graph inputs' profiles,
// whose max gives the capacities). Errors only from shape inference at the profile's max.
Result<KvCacheInPlace> store_kv_caches_in_place(ir::Graph& g,
                                                const std::unordered_map<ir::ValueId, InputProfile>& profiles,
                                                int64_t max_tensor_elements);

}  // namespace streamrt::builder
