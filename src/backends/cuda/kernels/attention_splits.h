// How the mma.sync attention kernel (attention_tc.cu) splits a block's keys into ranges when its
// blocks would leave SMs idle (a decode step: flash-decoding), each range written as a partial
// result that attention_combine joins. Plain C++ for the host, the kernel and the CPU tests
// (tests/unit/attention_splits_test.cc).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/attention.h"

namespace streamrt::cuda::attention {

// Ranges of `split_tiles` key tiles each, `splits` of them: splits * split_tiles covers every key tile.
struct KeySplits {
  int splits = 1;
  int split_tiles = 0;
};

// For a launch of `blocks` blocks over `key_tiles` (> 0) tiles: enough ranges for about four blocks an
// SM when the blocks alone leave SMs idle, at most 64 (attention_combine's limit); one range else.
// The counts are evened out: ceil(key_tiles / splits) tiles a range, and as few ranges as that needs.
inline KeySplits plan_key_splits(int64_t blocks, int64_t key_tiles, int sm_count) {
  int64_t splits = 1;
  if (blocks < sm_count && key_tiles >= 2) {
    const int64_t want = (4 * int64_t{sm_count} + blocks - 1) / blocks;
    splits = std::min<int64_t>({want, key_tiles, 64});
  }
  const int64_t tiles = (key_tiles + splits - 1) / splits;
  return {static_cast<int>((key_tiles + tiles - 1) / tiles), static_cast<int>(tiles)};
}

// Range `split` of a block whose keys lie in tiles [first_tile, all_tiles) (a sliding window's start,
// the causal end): the split-th run of split_tiles tiles from first_tile, cut at all_tiles. The ranges
// cover the block's tiles once each (a range past the end is empty: begin >= end). They once started at
// split * split_tiles, clamped up to first_tile, which ran the window's first tiles in every range before
// it (docs/benchmarks.md, twelfth session).
struct TileRange {
  int begin, end;
};
SRT_ATTENTION_HD inline TileRange split_range(int first_tile, int all_tiles, int split, int split_tiles) {
  const int begin = first_tile + split * split_tiles;
  return {begin, begin + split_tiles < all_tiles ? begin + split_tiles : all_tiles};
}

}  // namespace streamrt::cuda::attention
