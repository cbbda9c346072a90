#include "backends/cuda/tma/tma_map.h"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <mutex>
#include <string>

namespace streamrt::cuda::tma {
namespace {

Result<PFN_cuTensorMapEncodeTiled_v12000> encoder() {
  static std::once_flag once;
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::string error;
  std::call_once(once, [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !f)
      error = std::string("the CUDA driver has no cuTensorMapEncodeTiled (") + cudaGetErrorName(e) + ")";
    else
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  });
  if (!fn) return unsupported(error);
  return fn;
}

std::string describe(const TiledMap16& m) {
  std::string s = "dims [";
  for (int i = 0; i < m.rank; ++i) s += (i ? ", " : "") + std::to_string(m.dims[i]);
  s += "], strides [1";
  for (int i = 1; i < m.rank; ++i) s += ", " + std::to_string(m.strides[i]);
  s += "], box [";
  for (int i = 0; i < m.rank; ++i) s += (i ? ", " : "") + std::to_string(m.box[i]);
  return s + "]";
}

}  // namespace

Result<CUtensorMap> encode_swizzled_128(const TiledMap16& m) {
  // The driver's own limits, checked here so that the error says which one.
  if (m.rank < 1 || m.rank > 5) return invalid_argument("TMA map of rank " + std::to_string(m.rank) + " (1-5)");
  if (reinterpret_cast<uintptr_t>(m.base) % 16 != 0) return invalid_argument("TMA map base not 16-byte aligned");
  if (m.box[0] == 0 || m.box[0] * 2 > 128) return invalid_argument("TMA box row over 128 bytes: " + describe(m));
  for (int i = 0; i < m.rank; ++i) {
    if (m.dims[i] == 0 || m.dims[i] > (uint64_t{1} << 32)) return invalid_argument("TMA dim out of range: " + describe(m));
    if (m.box[i] == 0 || m.box[i] > 256) return invalid_argument("TMA box out of range: " + describe(m));
    if (i > 0 && ((m.strides[i] * 2) % 16 != 0 || m.strides[i] * 2 >= (uint64_t{1} << 40)))
      return invalid_argument("TMA stride not a multiple of 16 bytes below 2^40: " + describe(m));
  }
  SRT_ASSIGN_OR_RETURN(PFN_cuTensorMapEncodeTiled_v12000 encode, encoder());
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], element_strides[5];
  for (int i = 0; i < m.rank; ++i) {
    dims[i] = m.dims[i];
    box[i] = m.box[i];
    element_strides[i] = 1;
    if (i > 0) strides[i - 1] = m.strides[i] * 2;
  }
  CUtensorMap map;
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, static_cast<cuuint32_t>(m.rank), const_cast<void*>(m.base),
                            dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return invalid_argument("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                            ") for " + describe(m));
  return map;
}

}  // namespace streamrt::cuda::tma
