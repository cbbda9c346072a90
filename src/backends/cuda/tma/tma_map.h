// Tensor maps for the Hopper tensor memory accelerator (TMA): the descriptor a kernel's
// `cp.async.bulk.tensor` reads to copy a box of a global tensor into shared memory, with
// out-of-bounds elements written as zeros. Built on the host by the driver's
// cuTensorMapEncodeTiled, found through the runtime (cudaGetDriverEntryPointByVersion), so
// libstreamrt links the runtime only. Passed to kernels by value as `const __grid_constant__
// CUtensorMap`.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "streamrt/status.h"

namespace streamrt::cuda::tma {

// A tensor of 16-bit elements (float16 / bfloat16 / int16 alike: the copy moves bytes) of `rank`
// dims (1-5), innermost first: sizes `dims`, `strides` in elements between consecutive indices of
// dims 1.. (dim 0 is contiguous), copied in boxes of `box` elements with shared memory's 128-byte
// swizzle (box[0] * 2 must be 128 bytes or less: a box row is one swizzle row).
struct TiledMap16 {
  const void* base = nullptr;
  int rank = 0;
  uint64_t dims[5] = {};
  uint64_t strides[5] = {};  // strides[0] unused (1)
  uint32_t box[5] = {};
};

// kInvalidArgument names what TMA cannot address (alignment, strides, box sizes);
// kUnsupported when the driver has no cuTensorMapEncodeTiled.
Result<CUtensorMap> encode_swizzled_128(const TiledMap16& m);

}  // namespace streamrt::cuda::tma
