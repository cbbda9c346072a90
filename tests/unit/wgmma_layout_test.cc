// The shared-memory layout of the warpgroup-MMA attention kernel (backends/cuda/kernels/wgmma_layout.h)
// against what the hardware does with it, on the CPU: the descriptor's bit fields as the PTX ISA
// lays them out, the stored chunk positions against the 128-byte swizzle applied to the addresses
// the MMA walks (K-major k-steps of 32 bytes, N-major 8-key groups 1 KiB apart).
#include <gtest/gtest.h>

#include <set>

#include "backends/cuda/kernels/wgmma_layout.h"

namespace streamrt::cuda::wgmma {
namespace {

// The hardware's 128-byte swizzle of a byte address inside 1 KiB-aligned atoms.
uint32_t hw_swizzle(uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }

TEST(WgmmaLayout, DescriptorFieldsAreWhereThePtxIsaPutsThem) {
  const uint64_t d = descriptor(0x1C400, 128 * 128, 1024);
  EXPECT_EQ(d & 0x3FFF, 0x1C40u);                    // start address >> 4
  EXPECT_EQ((d >> 16) & 0x3FFF, (128u * 128) >> 4);  // leading byte offset >> 4
  EXPECT_EQ((d >> 32) & 0x3FFF, 1024u >> 4);         // stride byte offset >> 4
  EXPECT_EQ(d >> 62, 1u);                            // 128-byte swizzle
  EXPECT_EQ(d & ((uint64_t{3} << 14) | (uint64_t{3} << 30) | (uint64_t{0xFFFF} << 46)), 0u);  // the rest zero
  // Moving the start address by adding (bytes >> 4) changes that field alone, up to 256 KiB.
  for (uint32_t off : {32u, 96u, 2048u, 3u * 32768u, 229376u - 0x1C400u - 16u}) {
    const uint64_t moved = d + (off >> 4);
    EXPECT_EQ(moved, descriptor(0x1C400 + off, 128 * 128, 1024)) << off;
  }
}

// Every chunk of a tile lands once, 16-byte aligned, inside the tile; within a 64-element column block
// the stored position of (row r, chunk c) is the hardware swizzle of the unswizzled one.
TEST(WgmmaLayout, TilesAreA128ByteSwizzlePermutation) {
  for (int d : {64, 128})
    for (int rows : {64, 128}) {
      std::set<uint32_t> seen;
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < d / 8; ++c) {
          const uint32_t at = swizzled(rows, r, c);
          EXPECT_EQ(at % 16, 0u);
          EXPECT_LT(at, static_cast<uint32_t>(rows * d * 2));
          EXPECT_TRUE(seen.insert(at).second) << "row " << r << " chunk " << c;
          const uint32_t block = static_cast<uint32_t>((c / 8) * rows * 128);
          EXPECT_EQ(at, block + hw_swizzle(static_cast<uint32_t>(r * 128 + (c % 8) * 16)));
        }
    }
}

// K-major operands (Q, K): k-step kk of 16 elements starts 32 bytes on inside the 128-byte row (or a
// column block on); the MMA reads row r's two chunks of that step at start + r * 128 + j * 16,
// swizzled: the chunks the tile stored as logical chunks 2kk and 2kk + 1 of row r.
TEST(WgmmaLayout, KMajorStepsReadTheLogicalChunks) {
  const int rows = 128, d = 128;
  for (int kk = 0; kk < d / 16; ++kk)
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < 2; ++j) {
        const uint32_t atom = static_cast<uint32_t>((kk / 4) * rows * 128 + (r / 8) * 1024);  // 1 KiB aligned
        const uint32_t in_atom = static_cast<uint32_t>((r % 8) * 128 + (kk % 4) * 32 + j * 16);
        EXPECT_EQ(atom + hw_swizzle(in_atom), swizzled(rows, r, 2 * kk + j)) << kk << " " << r << " " << j;
      }
}

// N-major V: the MMA of k-step kc reads keys 16kc.. as two 8-key groups the stride offset (1 KiB)
// apart and the columns as 64-element blocks the leading offset (a column block) apart; element
// (key, column) it reads is where the tile stored that key row's chunk.
TEST(WgmmaLayout, NMajorValuesReadTheStoredKeyRows) {
  const int keys = 128, d = 128;
  const uint32_t lead = keys * 128, stride = 1024;
  for (int kc = 0; kc < keys / 16; ++kc)
    for (int key = 0; key < 16; ++key)
      for (int c = 0; c < d / 8; ++c) {
        const int row = kc * 16 + key;
        const uint32_t start = static_cast<uint32_t>(kc * 16 * 128);
        const uint32_t base = start + (c / 8) * lead + (key / 8) * stride;  // 1 KiB aligned
        const uint32_t in_atom = static_cast<uint32_t>((key % 8) * 128 + (c % 8) * 16);
        EXPECT_EQ(base + hw_swizzle(in_atom), swizzled(keys, row, c)) << kc << " " << key << " " << c;
      }
}

}  // namespace
}  // namespace streamrt::cuda::wgmma
