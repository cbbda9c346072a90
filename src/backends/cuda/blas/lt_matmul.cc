#include "backends/cuda/blas/lt_matmul.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "core/logging.h"

namespace streamrt::cuda {
namespace {

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

// Largest power of two (<= 256) dividing `v` (addresses and byte strides OR-ed together):
// cuBLASLt's heuristic assumes 256-byte alignment unless told less.
uint32_t alignment_of(uint64_t v) {
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}
uint64_t addr(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

bool uses_tf32(const LtGemm& g) { return g.tf32 && g.dtype == DataType::kFloat32; }

// Column-major layout of `rows` x `cols` (leading dim ld) with an optional strided batch.
Status make_layout(cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld,
                   int32_t batch, int64_t stride) {
  SRT_CUBLAS(cublasLtMatrixLayoutCreate(l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    SRT_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    SRT_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                sizeof(stride)));
  }
  return ok_status();
}

// Chosen algorithms per problem: everything the choice looked at is in the key (shapes,
// strides, types, alignments, workspace size, device, handle, compute type, recorded algo).
using AlgoKey = std::array<int64_t, 32>;
struct AlgoEntry {
  bool found = false;
  bool recorded = false;  // the plan's algorithm (else the heuristic's)
  cublasLtMatmulAlgo_t algo{};
};
std::mutex g_cache_mutex;
std::map<AlgoKey, AlgoEntry>& algo_cache() {
  static auto* cache = new std::map<AlgoKey, AlgoEntry>();
  return *cache;
}
constexpr size_t kMaxCacheEntries = 4096;

void store(const AlgoKey& key, const AlgoEntry& e) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  if (algo_cache().size() >= kMaxCacheEntries) algo_cache().clear();
  algo_cache()[key] = e;
}

// The bias epilogue reads the bias with vector loads; the heuristic cannot be told its
// alignment, so a recorded algorithm (timed with a 256-byte aligned bias) needs 16 at least.
constexpr uint32_t kMinRecordedBiasAlignment = 16;

// The recorded algorithm when cuBLASLt accepts it for this call, else the heuristic's first.
Result<AlgoEntry> choose(CudaResources& res, const LtOperation& op, const LtGemm& g) {
  AlgoEntry e;
  if (g.algo && (!g.bias || op.align_bias >= kMinRecordedBiasAlignment) &&
      lt_algo_fits(res.cublaslt, op, *g.algo, res.workspace_size)) {
    e.found = e.recorded = true;
    e.algo = *g.algo;
    return e;
  }
  if (g.algo)
    log_verbose("cuBLASLt does not accept the recorded algorithm for a " + std::to_string(g.m) + "x" +
                std::to_string(g.n) + "x" + std::to_string(g.k) + " GEMM (batch " + std::to_string(g.batch) +
                "; alignments " + std::to_string(op.full_a) + "/" + std::to_string(op.full_b) + "/" +
                std::to_string(op.full_d) + "): the heuristic's choice");
  std::array<cublasLtMatmulHeuristicResult_t, 1> r{};
  SRT_ASSIGN_OR_RETURN(int n, lt_heuristics(res.cublaslt, op, res.workspace_size, r));
  if (n > 0) e.found = true, e.algo = r[0].algo;
  return e;
}

void warn_once(std::atomic<bool>& flag, const std::string& msg) {
  if (!flag.exchange(true)) log_warning(msg);
}

// One cuBLASLt call for a batch of at most INT32_MAX matrices.
Status lt_matmul_chunk(CudaResources& res, const LtGemm& g, int32_t batch) {
  LtOperation op;
  SRT_RETURN_IF_ERROR(op.init(g, batch));
  int device = 0;
  SRT_CUDA(cudaGetDevice(&device));
  const bool batched = batch > 1;
  AlgoKey key = {device, static_cast<int64_t>(reinterpret_cast<uintptr_t>(res.cublaslt)),
                 static_cast<int64_t>(g.dtype), g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb,
                 g.ldd, batch, batched ? g.stride_a : 0, batched ? g.stride_b : 0,
                 batched ? g.stride_d : 0, g.bias != nullptr, op.align_a, op.align_b, op.align_d, op.align_bias,
                 static_cast<int64_t>(res.workspace_size), uses_tf32(g), g.algo != nullptr};
  if (g.algo) std::memcpy(&key[23], g.algo, sizeof(*g.algo));  // key[23..30]
  AlgoEntry entry;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = algo_cache().find(key);
    if (it != algo_cache().end()) entry = it->second, cached = true;
  }
  if (!cached) {
    SRT_ASSIGN_OR_RETURN(entry, choose(res, op, g));
    store(key, entry);
  }
  if (!entry.found)
    return unsupported("cuBLASLt has no algorithm for a " + std::string(dtype_name(g.dtype)) + " GEMM of " +
                       std::to_string(g.m) + "x" + std::to_string(g.k) + " by " + std::to_string(g.k) + "x" +
                       std::to_string(g.n) + (g.bias ? " with bias" : "") + " (batch " + std::to_string(batch) +
                       ")");
  Status st = lt_run(res.cublaslt, op, g, entry.algo, res.workspace, res.workspace_size, res.stream);
  if (st.ok() && g.algo) ++(entry.recorded ? builder::tactic_counters().recorded_runs : builder::tactic_counters().fallback_runs);
  if (st.ok() || !entry.recorded) return st;
  // cuBLASLt refused the recorded algorithm at launch (nothing was enqueued): the heuristic's
  // choice for this problem from now on.
  static std::atomic<bool> warned{false};
  warn_once(warned, "cuBLASLt refused an algorithm recorded in the plan (" + st.message() +
                        "); using its heuristic for that GEMM");
  LtGemm plain = g;
  plain.algo = nullptr;
  SRT_ASSIGN_OR_RETURN(entry, choose(res, op, plain));
  store(key, entry);
  if (!entry.found) return unsupported("cuBLASLt has no heuristic algorithm for a GEMM whose recorded one failed");
  SRT_RETURN_IF_ERROR(lt_run(res.cublaslt, op, g, entry.algo, res.workspace, res.workspace_size, res.stream));
  ++builder::tactic_counters().fallback_runs;
  return ok_status();
}

}  // namespace

LtOperation::~LtOperation() {
  if (ld) cublasLtMatrixLayoutDestroy(ld);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (op) cublasLtMatmulDescDestroy(op);
}

Status LtOperation::init(const LtGemm& g, int32_t batch) {
  SRT_ASSIGN_OR_RETURN(cudaDataType_t t, cuda_type(g.dtype));
  const int64_t esize = static_cast<int64_t>(dtype_size(g.dtype));
  const bool batched = batch > 1;
  const uint64_t sa = batched ? static_cast<uint64_t>(g.stride_a * esize) : 0;
  const uint64_t sb = batched ? static_cast<uint64_t>(g.stride_b * esize) : 0;
  const uint64_t sd = batched ? static_cast<uint64_t>(g.stride_d * esize) : 0;
  align_a = alignment_of(addr(g.b) | sb);  // cuBLAS "A" is our B
  align_b = alignment_of(addr(g.a) | sa);
  align_d = alignment_of(addr(g.d) | addr(g.c) | sd);  // C is read as D is laid out
  align_bias = g.bias ? alignment_of(addr(g.bias)) : 0;
  full_a = alignment_of(addr(g.b) | sb | static_cast<uint64_t>(g.ldb * esize));
  full_b = alignment_of(addr(g.a) | sa | static_cast<uint64_t>(g.lda * esize));
  full_d = alignment_of(addr(g.d) | addr(g.c) | sd | static_cast<uint64_t>(g.ldd * esize));

  SRT_CUBLAS(cublasLtMatmulDescCreate(&op, uses_tf32(g) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                      CUDA_R_32F));
  const cublasOperation_t op_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  if (g.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = t;
    SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
    SRT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
  }
  // Row-major X (r x c, row stride ld) is column-major X^T (c x r, ld); see the header.
  SRT_RETURN_IF_ERROR(make_layout(&la, t, g.trans_b ? g.k : g.n, g.trans_b ? g.n : g.k, g.ldb, batch, g.stride_b));
  SRT_RETURN_IF_ERROR(make_layout(&lb, t, g.trans_a ? g.m : g.k, g.trans_a ? g.k : g.m, g.lda, batch, g.stride_a));
  SRT_RETURN_IF_ERROR(make_layout(&ld, t, g.n, g.m, g.ldd, batch, g.stride_d));
  return ok_status();
}

Result<int> lt_heuristics(cublasLtHandle_t h, const LtOperation& op, size_t workspace,
                          std::span<cublasLtMatmulHeuristicResult_t> out) {
  if (out.empty()) return 0;
  Pref pref;
  SRT_CUBLAS(cublasLtMatmulPreferenceCreate(&pref.h));
  const uint64_t ws = workspace;
  SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &op.align_a,
                                                  sizeof(op.align_a)));
  SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &op.align_b,
                                                  sizeof(op.align_b)));
  SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &op.align_d,
                                                  sizeof(op.align_d)));
  SRT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &op.align_d,
                                                  sizeof(op.align_d)));
  int count = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, op.op, op.la, op.lb, op.ld, op.ld, pref.h,
                                                     static_cast<int>(out.size()), out.data(), &count);
  // NOT_SUPPORTED and zero results both mean "no algorithm for this problem".
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) return 0;
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_status(st, "cublasLtMatmulAlgoGetHeuristic");
  int kept = 0;
  for (int i = 0; i < std::min(count, static_cast<int>(out.size())); ++i)
    if (out[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS && out[static_cast<size_t>(i)].workspaceSize <= workspace)
      out[static_cast<size_t>(kept++)] = out[static_cast<size_t>(i)];
  return kept;
}

bool lt_algo_fits(cublasLtHandle_t h, const LtOperation& op, const cublasLtMatmulAlgo_t& algo, size_t workspace) {
  cublasLtMatmulHeuristicResult_t r{};
  if (cublasLtMatmulAlgoCheck(h, op.op, op.la, op.lb, op.ld, op.ld, &algo, &r) != CUBLAS_STATUS_SUCCESS) return false;
  if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > workspace) return false;
  // AlgoCheck does not see the pointers: compare the algorithm's minimum alignments with ours.
  auto aligned = [&](cublasLtMatmulAlgoCapAttributes_t attr, uint32_t have) {
    uint32_t need = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &need, sizeof(need), &written) != CUBLAS_STATUS_SUCCESS ||
        written != sizeof(need))
      return false;
    return need <= have;
  };
  return aligned(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, op.full_a) &&
         aligned(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES, op.full_b) &&
         aligned(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, op.full_d) &&
         aligned(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES, op.full_d);
}

Status lt_run(cublasLtHandle_t h, const LtOperation& op, const LtGemm& g, const cublasLtMatmulAlgo_t& algo,
              void* workspace, size_t workspace_size, cudaStream_t stream) {
  SRT_CUBLAS(cublasLtMatmul(h, op.op, &g.alpha, g.b, op.la, g.a, op.lb, &g.beta, g.c ? g.c : g.d, op.ld, g.d, op.ld,
                            &algo, workspace, workspace_size, stream));
  return ok_status();
}

uint32_t lt_call_flags(const LtGemm& g) {
  return (uses_tf32(g) ? builder::kLtAlgoTf32 : 0u) | (g.bias ? builder::kLtAlgoBias : 0u);
}

LtStepTactics::LtStepTactics(const ir::Node& step, int part) : tf32_(builder::step_allows_tf32(step)) {
  auto it = step.attrs.find(builder::lt_algo_attr(part));
  if (it == step.attrs.end()) return;
  static std::atomic<bool> warned_malformed{false}, warned_version{false};
  auto r = builder::decode_lt_algo(it->second);
  if (!r.ok()) {
    warn_once(warned_malformed, step.describe() + ": " + r.status().message() + "; cuBLASLt's heuristic decides");
    return;
  }
  const uint64_t version = cublasLtGetVersion();
  if (r->library_version != version) {
    warn_once(warned_version, "the plan's GEMM algorithms were chosen with cuBLASLt " +
                                  std::to_string(r->library_version) + ", this is " + std::to_string(version) +
                                  ": cuBLASLt's heuristic decides (rebuild the plan to time them again)");
    return;
  }
  record_ = *r;
  std::memcpy(&algo_, r->algo.data(), sizeof(algo_));
}

void LtStepTactics::apply(LtGemm& g) const {
  g.tf32 = tf32_ && g.dtype == DataType::kFloat32;
  g.algo = record_ && builder::lt_algo_applies(*record_, record_->library_version, lt_call_flags(g)) ? &algo_ : nullptr;
}

Status lt_matmul(CudaResources& res, const LtGemm& g) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
    return internal_error("lt_matmul: empty GEMM " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                          std::to_string(g.k) + " must be handled by the caller");
  if (g.bias && g.batch != 1) return internal_error("lt_matmul: a bias needs batch == 1");
  if (g.c && g.batch != 1) return internal_error("lt_matmul: a separate C needs batch == 1");
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
