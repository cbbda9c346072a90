// TMA tensor maps (backends/cuda/tma/tma_map.cc): what TMA cannot address is refused on the host
// with a message naming it, before the driver is asked (no GPU needed); a valid map encodes on a GPU
// machine (drivers since CUDA 12 have cuTensorMapEncodeTiled).
#include <gtest/gtest.h>

#include "backends/cuda/tma/tma_map.h"
#include "gpu_test_util.h"

namespace streamrt::cuda::tma {
namespace {

alignas(16) uint16_t g_data[64 * 128];

// K of a [1, 128, 1, 64] tensor in the attention kernel's view: [slabs 1][Skv 128][row 64], boxes
// of 64 x 128 x 1.
TiledMap16 valid() {
  TiledMap16 m;
  m.base = g_data;
  m.rank = 3;
  m.dims[0] = 64, m.dims[1] = 128, m.dims[2] = 1;
  m.strides[1] = 64, m.strides[2] = 64 * 128;
  m.box[0] = 64, m.box[1] = 128, m.box[2] = 1;
  return m;
}

void refused(const TiledMap16& m, const char* what) {
  Result<CUtensorMap> r = encode_swizzled_128(m);
  ASSERT_FALSE(r.ok()) << what;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << what;
  EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
}

TEST(TmaMap, WhatTmaCannotAddressIsRefusedByName) {
  TiledMap16 m = valid();
  m.rank = 6;
  refused(m, "rank 6");
  m = valid();
  m.base = reinterpret_cast<const uint8_t*>(g_data) + 2;
  refused(m, "not 16-byte aligned");
  m = valid();
  m.box[0] = 128;  // 256 bytes: wider than a swizzle row
  refused(m, "box row over 128 bytes");
  m = valid();
  m.box[1] = 512;
  refused(m, "box out of range");
  m = valid();
  m.dims[1] = 0;
  refused(m, "dim out of range");
  m = valid();
  m.strides[1] = 60;  // 120 bytes
  refused(m, "not a multiple of 16 bytes");
}

TEST(TmaMap, AValidMapEncodes) {
  SRT_REQUIRE_GPU();
  Result<CUtensorMap> r = encode_swizzled_128(valid());
  ASSERT_TRUE(r.ok()) << r.status().message();
}

}  // namespace
}  // namespace streamrt::cuda::tma
