// How the Hopper attention kernel addresses Q, K and V through TMA (backends/cuda/kernels/
// attention_kv_slabs.h), on the CPU: the bshd and bhsd layouts of the exports, grouped-query heads,
// and layouts whose batch rows do not start a slab row (the kernel is then not taken).
#include <gtest/gtest.h>

#include "backends/cuda/kernels/attention_kv_slabs.h"

namespace streamrt::cuda::attention {
namespace {

constexpr int64_t kB = 2, kH = 8, kHkv = 2, kS = 5, kD = 64;

// Batch map of [kB, kH] query heads over K / V with the given strides (kv_group kH / kHkv).
ops::AttentionBatchMap map_of(int64_t batch_stride, int64_t head_stride) {
  ops::AttentionBatchMap m;
  m.rank = 2;
  m.kv_group = kH / kHkv;
  m.dims[0] = kB, m.dims[1] = kH;
  m.k[0] = m.v[0] = batch_stride;
  m.k[1] = m.v[1] = head_stride;
  return m;
}

// Element (b, kv head g, key j, dim c) of the layout, found back through (col, slab) of the map.
void expect_addresses(const ops::AttentionBatchMap& m, int64_t row, int64_t at_bgjc(int64_t, int64_t, int64_t, int64_t)) {
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t h = 0; h < kH; ++h) {
      const KvStart s = kv_start(m.offsets(b * kH + h).k, row, kS);
      for (int64_t j : {int64_t{0}, kS - 1})
        for (int64_t c : {int64_t{0}, kD - 1})
          EXPECT_EQ((s.slab * kS + j) * row + s.col + c, at_bgjc(b, h / (kH / kHkv), j, c)) << b << " " << h;
    }
}

TEST(AttentionKvSlabs, BshdIsASlabABatchAndAHeadDColumnsOn) {
  const int64_t row = kHkv * kD;
  const ops::AttentionBatchMap m = map_of(kS * row, kD);
  EXPECT_EQ(kv_slabs(m, kB * kH, row, kS, kD, Operand::kKey), kB);
  EXPECT_EQ(kv_slabs(m, kB * kH, row, kS, kD, Operand::kValue), kB);
  expect_addresses(m, row, [](int64_t b, int64_t g, int64_t j, int64_t c) { return ((b * kS + j) * kHkv + g) * kD + c; });
}

TEST(AttentionKvSlabs, BhsdIsASlabAHead) {
  const ops::AttentionBatchMap m = map_of(kHkv * kS * kD, kS * kD);
  EXPECT_EQ(kv_slabs(m, kB * kH, kD, kS, kD, Operand::kKey), kB * kHkv);
  expect_addresses(m, kD, [](int64_t b, int64_t g, int64_t j, int64_t c) { return ((b * kHkv + g) * kS + j) * kD + c; });
}

TEST(AttentionKvSlabs, QueriesUseEveryHeadWithoutTheKvGroup) {
  // Q in bshd: [kB, kS, kH, kD], every query head its own D columns (K / V divide the head by kv_group).
  ops::AttentionBatchMap m = map_of(0, 0);
  const int64_t row = kH * kD;
  m.q[0] = kS * row, m.q[1] = kD;
  EXPECT_EQ(kv_slabs(m, kB * kH, row, kS, kD, Operand::kQuery), kB);
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t h = 0; h < kH; ++h) {
      const KvStart s = kv_start(m.offsets(b * kH + h).q, row, kS);
      EXPECT_EQ(s.slab, b);
      EXPECT_EQ(s.col, h * kD);
    }
  // Q in bhsd with a batch stride that is not a whole number of heads' rows: refused.
  m.q[0] = kH * kS * kD + 8, m.q[1] = kS * kD;
  EXPECT_EQ(kv_slabs(m, kB * kH, kD, kS, kD, Operand::kQuery), 0);
}

TEST(AttentionKvSlabs, RowsThatWouldWrapAreRefused) {
  // Batches 4 elements apart from a slab boundary: batch 1's rows start at column 4 of a 64-wide row.
  EXPECT_EQ(kv_slabs(map_of(kS * kD + 4, 0), kB * kH, kD, kS, kD, Operand::kKey), 0);
  // A head past the row's end (row narrower than the heads it holds).
  EXPECT_EQ(kv_slabs(map_of(kS * kHkv * kD, kD), kB * kH, kD, kS, kD, Operand::kKey), 0);
  // Head size wider than the row.
  EXPECT_EQ(kv_slabs(map_of(kS * kD, 0), kB * kH, kD / 2, kS, kD, Operand::kKey), 0);
  // A broadcast batch (stride 0) is one slab.
  EXPECT_EQ(kv_slabs(map_of(0, 0), kB * kH, kD, kS, kD, Operand::kKey), 1);
}

}  // namespace
}  // namespace streamrt::cuda::attention
