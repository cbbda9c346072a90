// Byte-moving helpers shared by the CUDA kernels of the data-movement ops (Transpose, Slice,
// Concat, Split, Tile, DepthToSpace, ...), the device twins of src/ops/data_movement.h. These
// ops never look at element values, so every dtype is moved as opaque 1/2/4/8-byte elements
// (or wider 16-byte units where sizes and addresses allow).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/kernels/cuda_types.cuh"

namespace streamrt::cuda {

// Most dims a strided copy handles after unit dims are dropped and contiguous dims merged
// (Tile views a rank-r input as 2r dims, hence more than the usual 8).
inline constexpr int kMaxCopyDims = 12;

// Copies the strided view of `src` described by (`out_dims`, `src_strides` in elements, may be
// zero or negative, `src_offset` in elements) into dense `dst` of shape `out_dims`, like
// ops::strided_copy. The caller guarantees every addressed source element is in bounds.
// kUnsupported when the view still has more than kMaxCopyDims dims after merging.
Status strided_copy_cuda(void* dst, const void* src, size_t elem_size, const Dims& out_dims,
                         const std::vector<int64_t>& src_strides, int64_t src_offset, cudaStream_t stream,
                         const std::string& what);

// Copies `rows` rows of `row_bytes` bytes from `src` (rows `src_pitch` bytes apart) to `dst`
// (rows `dst_pitch` bytes apart): the pieces of Concat and Split.
Status pitched_copy_cuda(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t rows,
                         int64_t row_bytes, cudaStream_t stream);

// Widest unit in {16, 8, 4, 2, 1} bytes that divides `bits`, the OR of every byte quantity
// (sizes, pitches, offsets, possibly negative) and every address a copy uses: the element type
// that copy can move without splitting or misaligning anything.
inline size_t copy_width(uint64_t bits) {
  size_t w = 16;
  while (w > 1 && (bits & (w - 1)) != 0) w >>= 1;
  return w;
}
inline uint64_t address_bits(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// Calls f.template operator()<E>() with an unsigned element type of `width` bytes (uint4 for 16).
template <typename F>
Status by_width(size_t width, F&& f) {
  switch (width) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<unsigned long long>();
    case 16: return f.template operator()<uint4>();
    default: break;
  }
  return unsupported("element size " + std::to_string(width) + " is not supported by the CUDA copy kernels");
}

// Int list from input `input` (its host copy: the op must declare it a shape input) or, when
// the input is absent, attribute `attr` (older opsets); nullopt when neither is given. The
// device twin of ops::int_list_input_or_attr(KernelContext&).
Result<std::optional<std::vector<int64_t>>> host_int_list(const CudaKernelContext& ctx, size_t input,
                                                          const std::string& attr);

}  // namespace streamrt::cuda
