// How the mma.sync attention kernel splits a decode step's keys into ranges
// (backends/cuda/kernels/attention_splits.h), on the CPU: every key tile of a block in exactly one range,
// also when a sliding window starts the block's keys past the first ranges (the case that once ran the
// window's first tiles in every range before it), and the range counts a launch plans.
#include <gtest/gtest.h>

#include <vector>

#include "backends/cuda/kernels/attention_splits.h"

namespace streamrt::cuda::attention {
namespace {

// How often each tile of [0, all_tiles) is taken by the ranges of a block whose keys start at first_tile.
std::vector<int> coverage(const KeySplits& ks, int first_tile, int all_tiles) {
  std::vector<int> seen(static_cast<size_t>(all_tiles), 0);
  for (int s = 0; s < ks.splits; ++s) {
    const TileRange r = split_range(first_tile, all_tiles, s, ks.split_tiles);
    for (int t = r.begin; t < r.end; ++t) ++seen[static_cast<size_t>(t)];
  }
  return seen;
}

TEST(AttentionSplits, EveryTileOfABlockInExactlyOneRange) {
  for (int64_t key_tiles : {2, 3, 7, 47, 64, 129, 500})
    for (int64_t blocks : {1, 6, 8, 40, 131}) {
      const KeySplits ks = plan_key_splits(blocks, key_tiles, 132);
      ASSERT_GE(ks.splits, 1);
      ASSERT_GE(int64_t{ks.splits} * ks.split_tiles, key_tiles) << key_tiles << " tiles, " << blocks << " blocks";
      // A block's keys: all of them, a window's last tiles, a causal prefix, a window inside a prefix.
      const int all = static_cast<int>(key_tiles);
      for (auto [first, end] : {std::pair{0, all}, std::pair{all - 1, all}, std::pair{all / 2, all},
                                std::pair{0, (all + 1) / 2}, std::pair{all / 3, all - all / 4}}) {
        const std::vector<int> seen = coverage(ks, first, end);
        for (int t = 0; t < end; ++t)
          EXPECT_EQ(seen[static_cast<size_t>(t)], t >= first ? 1 : 0)
              << "tile " << t << " of [" << first << ", " << end << "), " << ks.splits << " ranges of "
              << ks.split_tiles;
      }
    }
}

// The decode of AttentionMasksGpu's windowed case: 3000 keys in 64-key tiles, the window's first tile 35, 6
// packed batches on 132 SMs: 47 ranges of one tile; the ranges before the window once all took tile 35.
TEST(AttentionSplits, AWindowFarInsideALongCache) {
  const KeySplits ks = plan_key_splits(6, 47, 132);
  EXPECT_EQ(ks.splits, 47);
  EXPECT_EQ(ks.split_tiles, 1);
  const std::vector<int> seen = coverage(ks, 35, 47);
  for (int t = 0; t < 47; ++t) EXPECT_EQ(seen[static_cast<size_t>(t)], t >= 35 ? 1 : 0) << t;
  const TileRange first = split_range(35, 47, 0, 1);
  EXPECT_EQ(first.begin, 35);
  EXPECT_EQ(first.end, 36);
  const TileRange past = split_range(35, 47, 20, 1);
  EXPECT_GE(past.begin, past.end);  // empty: its partial is (-inf, 0), which the combine ignores
}

TEST(AttentionSplits, RangeCountsOfALaunch) {
  EXPECT_EQ(plan_key_splits(132, 100, 132).splits, 1);  // the blocks fill the SMs
  EXPECT_EQ(plan_key_splits(132, 100, 132).split_tiles, 100);
  EXPECT_EQ(plan_key_splits(8, 1, 132).splits, 1);  // one tile: nothing to split
  EXPECT_EQ(plan_key_splits(1, 1000, 132).splits, 63);  // at most 64: 16 tiles a range, 63 ranges
  EXPECT_EQ(plan_key_splits(1, 1000, 132).split_tiles, 16);
  const KeySplits ks = plan_key_splits(8, 33, 132);  // wants 66, capped at 33 tiles: one each
  EXPECT_EQ(ks.splits, 33);
  EXPECT_EQ(ks.split_tiles, 1);
}

}  // namespace
}  // namespace streamrt::cuda::attention
