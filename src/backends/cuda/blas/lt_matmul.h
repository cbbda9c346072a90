// Row-major GEMM on the device through cuBLASLt, for the float types (float32 / float16 /
// bfloat16, always accumulated in float32: CUBLAS_COMPUTE_32F, so float32 results match the
// CPU's sgemm within rounding; CUBLAS_COMPUTE_32F_FAST_TF32 only when the plan allows TF32).
//
//   D[m x n] = alpha * op(A) * op(B) + beta * D  (+ bias[n] added to every row)
//
// cuBLASLt is column-major; a row-major matrix is the column-major view of its transpose, so
// the call computes D^T = op(B)^T * op(A)^T with cuBLAS's "A" being our B and "B" our A.
//
// The algorithm: the one recorded in the plan at build time (builder/tactics.h) when cuBLASLt
// accepts it for the call, else cuBLASLt's heuristic (both cached per problem).
#pragma once

#include <optional>
#include <span>

#include "backends/cuda/cuda_kernel.h"
#include "builder/tactics.h"

namespace streamrt::cuda {

static_assert(sizeof(cublasLtMatmulAlgo_t) == builder::kLtAlgoWords * sizeof(uint64_t),
              "the plan records cublasLtMatmulAlgo_t as 8 uint64 words");

// The workspace a context starts with (cuda_context.cc; cuBLASLt's recommendation on Hopper):
// the tuner lets no algorithm need more, so a recorded one always fits at run time.
inline constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;

struct LtGemm {
  DataType dtype = DataType::kFloat32;  // of A, B, D and bias
  bool trans_a = false;  // A stored k x m (row-major) when set, else m x k
  bool trans_b = false;  // B stored n x k when set, else k x n
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0;  // row stride (elements) of A as stored
  const void* b = nullptr;
  int64_t ldb = 0;
  void* d = nullptr;  // output, also the C operand (in place) when beta != 0 and c is null
  int64_t ldd = 0;
  const void* c = nullptr;  // the C operand when beta != 0, laid out as D (batch 1 only)
  // Strided batch: `batch` GEMMs, matrix i at a + i * stride_a etc. (a stride of 0 shares the
  // operand between all batches).
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  float alpha = 1.f;
  float beta = 0.f;
  // Optional row vector of n elements (type dtype) added to every row of D through the
  // epilogue (CUBLASLT_EPILOGUE_BIAS). Only with batch == 1.
  const void* bias = nullptr;
  // float32 only: CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores) instead of CUBLAS_COMPUTE_32F.
  bool tf32 = false;
  // An algorithm recorded at build time, tried first: used when cublasLtMatmulAlgoCheck accepts
  // it for this call and its workspace and alignment needs are met, else the heuristic decides.
  const cublasLtMatmulAlgo_t* algo = nullptr;
};

// Enqueues the GEMM on res.stream with res.workspace. kUnsupported when cuBLASLt has no
// algorithm for it (callers with a bias fall back to a plain GEMM); k must be > 0 and m, n > 0.
Status lt_matmul(CudaResources& res, const LtGemm& g);

// The flags a call's recorded algorithm must have been timed with (builder::kLtAlgoTf32 / Bias).
uint32_t lt_call_flags(const LtGemm& g);

// A MatMul / Gemm step's recorded tactics: "__tf32" and "__lt_algo" when it decodes and was
// chosen with this cuBLASLt (a malformed or foreign record is ignored; logged once a process).
class LtStepTactics {
 public:
  // The record of the step's GEMM `part` (builder::lt_algo_attr).
  explicit LtStepTactics(const ir::Node& step, int part = 0);
  // Sets g.tf32 (float32 GEMMs) and, when the record was timed for the same flags, g.algo
  // (pointing into this object). Call after g's bias and dtype are final.
  void apply(LtGemm& g) const;
  bool has_algo() const { return record_.has_value(); }

 private:
  bool tf32_ = false;
  std::optional<builder::LtAlgoRecord> record_;
  cublasLtMatmulAlgo_t algo_{};
};

// ---- Pieces shared with the build-time tuner (lt_tactics.cc) ----

// cuBLASLt's descriptors for one call of `g` with `batch` matrices (owned), and the
// alignments of its operands that the heuristic is told about.
class LtOperation {
 public:
  LtOperation() = default;
  LtOperation(const LtOperation&) = delete;
  LtOperation& operator=(const LtOperation&) = delete;
  ~LtOperation();
  Status init(const LtGemm& g, int32_t batch);

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;  // cuBLAS's A (our B), B (our A), C = D
  uint32_t align_a = 0, align_b = 0, align_d = 0, align_bias = 0;   // for the heuristic (pointers, batch strides)
  uint32_t full_a = 0, full_b = 0, full_d = 0;                      // also counting leading dims
};

// Up to out.size() heuristic candidates (best first) whose workspace fits `workspace`; 0 when
// cuBLASLt has none.
Result<int> lt_heuristics(cublasLtHandle_t h, const LtOperation& op, size_t workspace,
                          std::span<cublasLtMatmulHeuristicResult_t> out);
// Whether `algo` can run `op` (cublasLtMatmulAlgoCheck, workspace <= `workspace`, the
// operands' alignments at least the algorithm's minimums).
bool lt_algo_fits(cublasLtHandle_t h, const LtOperation& op, const cublasLtMatmulAlgo_t& algo, size_t workspace);
// One cublasLtMatmul of `g` (its pointers, scales, batch offsets as given) with `algo`.
Status lt_run(cublasLtHandle_t h, const LtOperation& op, const LtGemm& g, const cublasLtMatmulAlgo_t& algo,
              void* workspace, size_t workspace_size, cudaStream_t stream);

}  // namespace streamrt::cuda
