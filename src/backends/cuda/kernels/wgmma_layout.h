// Shared-memory layout of the warpgroup-MMA kernels (attention_wgmma.cu), host and device: where a
// 16-byte chunk of a tile row lives under the 128-byte swizzle, and the matrix descriptor that names
// such a tile to wgmma. Plain C++ so the CPU unit tests check it (tests/unit/wgmma_layout_test.cc).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SRT_WGMMA_HD __host__ __device__ __forceinline__
#else
#define SRT_WGMMA_HD inline
#endif

namespace streamrt::cuda::wgmma {

// A tile of `rows` rows is D / 64 column blocks of [rows][128 bytes]; 16-byte chunk c of row r sits
// in block c / 8 at chunk (c % 8) ^ (r % 8) of its 128-byte row. With the tile on a 1 KiB boundary
// this is the hardware's 128-byte swizzle (address bits 4-6 exclusive-or bits 7-9), which the MMA
// undoes when it reads through a descriptor with swizzle mode 1.
SRT_WGMMA_HD uint32_t swizzled(int rows, int r, int c) {
  return static_cast<uint32_t>((c / 8) * rows * 128 + r * 128 + ((c % 8) ^ (r % 8)) * 16);
}

// Shared-memory matrix descriptor: start address (bits 0-13), leading (16-29) and stride (32-45) byte
// offsets, each in 16-byte units, and the 128-byte swizzle (mode 1 in bits 62-63). A k-step or a
// ring slot moves only the start address: adding (bytes >> 4) to a descriptor does that while the
// address stays below 256 KiB.
SRT_WGMMA_HD uint64_t descriptor(uint32_t addr, uint32_t lead, uint32_t stride) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t((lead & 0x3FFFF) >> 4) << 16) |
         (uint64_t((stride & 0x3FFFF) >> 4) << 32) | (uint64_t{1} << 62);
}

}  // namespace streamrt::cuda::wgmma
