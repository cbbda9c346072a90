// Device copies shared by the data-movement kernels: a general strided gather (one thread per
// output element), a tiled shared-memory transpose for views whose second-to-last output dim
// is contiguous in the source, and a pitched 2-D copy for Concat / Split.
#include <cstring>

#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {

// A strided view passed to the kernel by value (no host memory outlives the launch).
struct CopyView {
  int rank = 0;
  int64_t dims[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
  int64_t offset = 0;
};

// dst[i] = src[offset + sum(coord_d * stride_d)] for the row-major coords of i over dims.
// I is uint32_t when n fits in 31 bits (cheaper divisions), else int64_t.
template <typename E, typename I>
__global__ void strided_copy_kernel(E* __restrict__ dst, const E* __restrict__ src, CopyView v, I n) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    I rem = i;
    int64_t off = v.offset;
    for (int d = v.rank - 1; d > 0; --d) {
      const I dim = static_cast<I>(v.dims[d]);
      const I q = rem / dim;
      off += static_cast<int64_t>(rem - q * dim) * v.strides[d];
      rem = q;
    }
    off += static_cast<int64_t>(rem) * v.strides[0];
    dst[i] = src[off];
  }
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;

// Batched transpose through shared memory: out[n][a][b] = src[offset + n*batch_stride + a + b*pitch]
// for out dims (batch, A, B). Reads walk `a` (contiguous in the source), writes walk `b`
// (contiguous in the output), both coalesced. Every thread of a block runs the same loop trip
// counts (they depend only on blockIdx), so the __syncthreads are uniform.
template <typename E>
__global__ void transpose_tiled_kernel(E* __restrict__ dst, const E* __restrict__ src, int64_t batch, int64_t A,
                                       int64_t B, int64_t batch_stride, int64_t pitch, int64_t offset) {
  __shared__ E tile[kTile][kTile + 1];
  const int64_t tiles_a = (A + kTile - 1) / kTile;
  const int64_t tiles_b = (B + kTile - 1) / kTile;
  for (int64_t n = blockIdx.z; n < batch; n += gridDim.z) {
    const E* s = src + offset + n * batch_stride;
    E* d = dst + n * A * B;
    for (int64_t ta = blockIdx.y; ta < tiles_a; ta += gridDim.y) {
      for (int64_t tb = blockIdx.x; tb < tiles_b; tb += gridDim.x) {
        const int64_t a = ta * kTile + threadIdx.x;
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
          const int64_t b = tb * kTile + j;
          if (a < A && b < B) tile[j][threadIdx.x] = s[a + b * pitch];
        }
        __syncthreads();
        const int64_t b = tb * kTile + threadIdx.x;
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
          const int64_t a2 = ta * kTile + j;
          if (a2 < A && b < B) d[a2 * B + b] = tile[threadIdx.x][j];
        }
        __syncthreads();
      }
    }
  }
}

// Rows of row_len elements from src (pitch spitch) to dst (pitch dpitch), pitches in elements.
template <typename E, typename I>
__global__ void pitched_copy_kernel(E* __restrict__ dst, int64_t dpitch, const E* __restrict__ src, int64_t spitch,
                                    I row_len, I n) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    const I r = i / row_len;
    const I c = i - r * row_len;
    dst[static_cast<int64_t>(r) * dpitch + c] = src[static_cast<int64_t>(r) * spitch + c];
  }
}

constexpr int64_t kMax32 = INT32_MAX;

template <typename E>
Status launch_strided(void* dst, const void* src, const CopyView& v, int64_t n, cudaStream_t stream) {
  if (n <= kMax32)
    strided_copy_kernel<E, uint32_t><<<grid_for(n), 256, 0, stream>>>(static_cast<E*>(dst), static_cast<const E*>(src),
                                                                       v, static_cast<uint32_t>(n));
  else
    strided_copy_kernel<E, int64_t><<<grid_for(n), 256, 0, stream>>>(static_cast<E*>(dst), static_cast<const E*>(src),
                                                                      v, n);
  SRT_CUDA_LAUNCH("strided_copy_kernel");
  return ok_status();
}

// The tiled transpose when the merged view is (batch?, A, B) with the A dim contiguous in the
// source and both A and B long enough for tiles to pay off. Returns false when it does not apply.
bool tiled_transpose_applies(const Dims& dims, const std::vector<int64_t>& strides, size_t elem_size) {
  const size_t r = dims.size();
  if ((r != 2 && r != 3) || elem_size > 8) return false;
  return strides[r - 2] == 1 && strides[r - 1] != 1 && dims[r - 2] >= 16 && dims[r - 1] >= 16;
}

Status launch_tiled_transpose(void* dst, const void* src, size_t elem_size, const Dims& dims,
                              const std::vector<int64_t>& strides, int64_t offset, cudaStream_t stream) {
  const size_t r = dims.size();
  const int64_t batch = r == 3 ? dims[0] : 1;
  const int64_t batch_stride = r == 3 ? strides[0] : 0;
  const int64_t A = dims[r - 2], B = dims[r - 1], pitch = strides[r - 1];
  const int64_t tiles_a = (A + kTile - 1) / kTile, tiles_b = (B + kTile - 1) / kTile;
  dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles_b, INT32_MAX)),
            static_cast<unsigned>(std::min<int64_t>(tiles_a, 65535)),
            static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  dim3 block(kTile, kTileRows);
  return by_width(elem_size, [&]<typename E>() {
    transpose_tiled_kernel<E><<<grid, block, 0, stream>>>(static_cast<E*>(dst), static_cast<const E*>(src), batch, A,
                                                          B, batch_stride, pitch, offset);
    SRT_CUDA_LAUNCH("transpose_tiled_kernel");
    return ok_status();
  });
}

}  // namespace

Status strided_copy_cuda(void* dst, const void* src, size_t elem_size, const Dims& out_dims,
                         const std::vector<int64_t>& src_strides, int64_t src_offset, cudaStream_t stream,
                         const std::string& what) {
  for (int64_t d : out_dims)
    if (d == 0) return ok_status();
  // Drop unit dims and merge dims that are contiguous in the source (as ops::strided_copy).
  ops::StridedView merged = ops::merge_strided_view(out_dims, src_strides);
  Dims& dims = merged.dims;
  std::vector<int64_t>& strides = merged.strides;
  const auto esize = static_cast<int64_t>(elem_size);
  const char* s = static_cast<const char*>(src);
  // One element, or one contiguous run: a plain device-to-device copy.
  if (dims.empty() || (dims.size() == 1 && strides[0] == 1)) {
    const int64_t bytes = (dims.empty() ? 1 : dims[0]) * esize;
    SRT_CUDA(cudaMemcpyAsync(dst, s + src_offset * esize, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream));
    return ok_status();
  }
  size_t width = elem_size;
  int64_t offset = src_offset;
  if (strides.back() == 1) {
    // The innermost dim is a contiguous run: move it in the widest unit that divides every
    // byte size, stride, offset and address, rescaling the view to that unit.
    uint64_t bits = address_bits(dst) | address_bits(src) | static_cast<uint64_t>(dims.back() * esize) |
                    static_cast<uint64_t>(offset * esize);
    for (size_t d = 0; d + 1 < dims.size(); ++d) bits |= static_cast<uint64_t>(strides[d] * esize);
    width = copy_width(bits);
    const auto w = static_cast<int64_t>(width);
    if (width != elem_size) {
      dims.back() = dims.back() * esize / w;
      for (size_t d = 0; d + 1 < dims.size(); ++d) strides[d] = strides[d] * esize / w;
      offset = offset * esize / w;
    }
  } else if (tiled_transpose_applies(dims, strides, elem_size)) {
    return launch_tiled_transpose(dst, src, elem_size, dims, strides, offset, stream);
  }
  if (dims.size() > static_cast<size_t>(kMaxCopyDims))
    return unsupported(what + ": a strided copy over " + std::to_string(dims.size()) + " non-mergeable dims (at most " +
                       std::to_string(kMaxCopyDims) + " on CUDA)");
  CopyView v;
  v.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    v.dims[d] = dims[d];
    v.strides[d] = strides[d];
  }
  v.offset = offset;
  const int64_t n = dims_numel(dims);
  return by_width(width, [&]<typename E>() { return launch_strided<E>(dst, src, v, n, stream); });
}

Status pitched_copy_cuda(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t rows,
                         int64_t row_bytes, cudaStream_t stream) {
  if (rows <= 0 || row_bytes <= 0) return ok_status();
  if (rows == 1 || (dst_pitch == row_bytes && src_pitch == row_bytes)) {
    SRT_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(rows * row_bytes), cudaMemcpyDeviceToDevice, stream));
    return ok_status();
  }
  const size_t width = copy_width(address_bits(dst) | address_bits(src) | static_cast<uint64_t>(dst_pitch) |
                                  static_cast<uint64_t>(src_pitch) | static_cast<uint64_t>(row_bytes));
  const auto w = static_cast<int64_t>(width);
  const int64_t row_len = row_bytes / w, dp = dst_pitch / w, sp = src_pitch / w;
  const int64_t n = rows * row_len;
  return by_width(width, [&]<typename E>() {
    E* d = static_cast<E*>(dst);
    const E* s = static_cast<const E*>(src);
    if (n <= kMax32)
      pitched_copy_kernel<E, uint32_t><<<grid_for(n), 256, 0, stream>>>(d, dp, s, sp, static_cast<uint32_t>(row_len),
                                                                         static_cast<uint32_t>(n));
    else
      pitched_copy_kernel<E, int64_t><<<grid_for(n), 256, 0, stream>>>(d, dp, s, sp, row_len, n);
    SRT_CUDA_LAUNCH("pitched_copy_kernel");
    return ok_status();
  });
}

Result<std::optional<std::vector<int64_t>>> host_int_list(const CudaKernelContext& ctx, size_t input,
                                                          const std::string& attr) {
  using Opt = std::optional<std::vector<int64_t>>;
  if (ctx.has_input(input)) {
    const Tensor* v = ctx.host_value(input);
    if (!v) return ctx.error("input " + std::to_string(input) + " (" + attr + ") has no host copy");
    auto vals = v->to_int64_vector();
    if (!vals.ok()) return ctx.error(attr + ": " + vals.status().message());
    return Opt(std::move(vals).value());
  }
  if (ctx.node().has_attr(attr)) {
    SRT_ASSIGN_OR_RETURN(auto vals, ctx.node().attr_ints(attr));
    return Opt(std::move(vals));
  }
  return Opt();
}

}  // namespace streamrt::cuda
