#include "backends/cuda/blas/lt_matmul.h"

#include <array>
#include <cstring>
#include <map>
#include <mutex>

namespace streamrt::cuda {
namespace {

// Owners for the cuBLASLt descriptors (destroyed on every return path).
struct OpDesc {
  cublasLtMatmulDesc_t h = nullptr;
  ~OpDesc() { if (h) cublasLtMatmulDescDestroy(h); }
};
struct Layout {
  cublasLtMatrixLayout_t h = nullptr;
  ~Layout() { if (h) cublasLtMatrixLayoutDestroy(h); }
};
struct Pref {
  cublasLtMatmulPreference_t h = nullptr;
  ~Pref() { if (h) cublasLtMatmulPreferenceDestroy(h); }
};

Result<cudaDataType_t> cuda_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: return CUDA_R_32F;
    case DataType::kFloat16: return CUDA_R_16F;
    case DataType::kBFloat16: return CUDA_R_16BF;
    default: return unsupported(std::string("cuBLASLt GEMM: data type ") + dtype_name(t) + " is not supported");
  }
}

// Largest power of two (<= 256) dividing the address and, for a batch, the byte stride
// between matrices: cuBLASLt's heuristic assumes 256-byte alignment unless told less.
uint32_t alignment_of(const void* p, int64_t stride_bytes) {
  const uint64_t v = reinterpret_cast<uintptr_t>(p) | static_cast<uint64_t>(stride_bytes);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

// Column-major layout of `rows` x `cols` (leading dim ld) with an optional strided batch.
Status make_layout(Layout& l, cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, int32_t batch,
                   int64_t stride) {
  SRT_CUBLAS(cublasLtMatrixLayoutCreate(&l.h, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    SRT_CUBLAS(cublasLtMatrixLayoutSetAttribute(l.h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    SRT_CUBLAS(cublasLtMatrixLayoutSetAttribute(l.h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                sizeof(stride)));
  }
  return ok_status();
}

// Heuristic results per problem: everything the heuristic looked at is in the key (shapes,
// strides, types, alignments, workspace size, device and handle).
using AlgoKey = std::array<int64_t, 22>;
struct AlgoEntry {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
};
std::mutex g_cache_mutex;
std::map<AlgoKey, AlgoEntry>& algo_cache() {
  static auto* cache = new std::map<AlgoKey, AlgoEntry>();
  return *cache;
}
constexpr size_t kMaxCacheEntries = 4096;

// One cuBLASLt call for a batch of at most INT32_MAX matrices.
Status lt_matmul_chunk(CudaResources& res, const LtGemm& g, int32_t batch) {
  SRT_ASSIGN_OR_RETURN(cudaDataType_t t, cuda_type(g.dtype));
  const int64_t esize = static_cast<int64_t>(dtype_size(g.dtype));
  const bool batched = batch > 1;
  const uint32_t align_a = alignment_of(g.b, batched ? g.stride_b * esize : 0);  // cuBLAS "A" is our B
  const uint32_t align_b = alignment_of(g.a, batched ? g.stride_a * esize : 0);
  const uint32_t align_d = alignment_of(g.d, batched ? g.stride_d * esize : 0);
  const uint32_t align_bias = g.bias ? alignment_of(g.bias, 0) : 0;

  OpDesc op;
  SRT_CUBLAS(cublasLtMatmulDescCreate(&op.h, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  if (g.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = t;
    SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
    SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                              sizeof(bias_type)));
  }
  // Row-major X (r x c, row stride ld) is column-major X^T (c x r, ld); see the header.
  Layout la, lb, ld;
  SRT_RETURN_IF_ERROR(make_layout(la, t, g.trans_b ? g.k : g.n, g.trans_b ? g.n : g.k, g.ldb, batch, g.stride_b));
  SRT_RETURN_IF_ERROR(make_layout(lb, t, g.trans_a ? g.m : g.k, g.trans_a ? g.k : g.m, g.lda, batch, g.stride_a));
  SRT_RETURN_IF_ERROR(make_layout(ld, t, g.n, g.m, g.ldd, batch, g.stride_d));

  int device = 0;
  SRT_CUDA(cudaGetDevice(&device));
  const AlgoKey key = {device, static_cast<int64_t>(reinterpret_cast<uintptr_t>(res.cublaslt)),
                       static_cast<int64_t>(g.dtype), g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb,
                       g.ldd, batch, batched ? g.stride_a : 0, batched ? g.stride_b : 0,
                       batched ? g.stride_d : 0, g.bias != nullptr, align_a, align_b, align_d, align_bias,
                       static_cast<int64_t>(res.workspace_size), 0};
  AlgoEntry entry;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = algo_cache().find(key);
    if (it != algo_cache().end()) entry = it->second, cached = true;
  }
  if (!cached) {
    Pref pref;
    SRT_CUBLAS(cublasLtMatmulPreferenceCreate(&pref.h));
    const uint64_t ws = res.workspace_size;
    SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                                                    sizeof(align_a)));
    SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                                                    sizeof(align_b)));
    SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d,
                                                    sizeof(align_d)));
    SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d,
                                                    sizeof(align_d)));
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(res.cublaslt, op.h, la.h, lb.h, ld.h, ld.h, pref.h, 1,
                                                       &result, &count);
    // NOT_SUPPORTED / zero results both mean "no algorithm for this problem".
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
      return cublas_status(st, "cublasLtMatmulAlgoGetHeuristic");
    entry.found = st == CUBLAS_STATUS_SUCCESS && count > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (entry.found) entry.algo = result.algo;
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (algo_cache().size() >= kMaxCacheEntries) algo_cache().clear();
    algo_cache()[key] = entry;
  }
  if (!entry.found)
    return unsupported("cuBLASLt has no algorithm for a " + std::string(dtype_name(g.dtype)) + " GEMM of " +
                       std::to_string(g.m) + "x" + std::to_string(g.k) + " by " + std::to_string(g.k) + "x" +
                       std::to_string(g.n) + (g.bias ? " with bias" : "") + " (batch " + std::to_string(batch) +
                       ")");
  SRT_CUBLAS(cublasLtMatmul(res.cublaslt, op.h, &g.alpha, g.b, la.h, g.a, lb.h, &g.beta, g.d, ld.h, g.d, ld.h,
                            &entry.algo, res.workspace, res.workspace_size, res.stream));
  return ok_status();
}

}  // namespace

Status lt_matmul(CudaResources& res, const LtGemm& g) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
    return internal_error("lt_matmul: empty GEMM " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                          std::to_string(g.k) + " must be handled by the caller");
  if (g.bias && g.batch != 1) return internal_error("lt_matmul: a bias needs batch == 1");
  // Batch counts are int32 in cuBLASLt; split very large batches (never seen in practice).
  constexpr int64_t kMaxBatch = 1 << 30;
  LtGemm part = g;
  const int64_t esize = static_cast<int64_t>(dtype_size(g.dtype));
  for (int64_t done = 0; done < g.batch; done += kMaxBatch) {
    const int64_t count = std::min(kMaxBatch, g.batch - done);
    part.a = static_cast<const uint8_t*>(g.a) + done * g.stride_a * esize;
    part.b = static_cast<const uint8_t*>(g.b) + done * g.stride_b * esize;
    part.d = static_cast<uint8_t*>(g.d) + done * g.stride_d * esize;
    SRT_RETURN_IF_ERROR(lt_matmul_chunk(res, part, static_cast<int32_t>(count)));
  }
  return ok_status();
}

}  // namespace streamrt::cuda
