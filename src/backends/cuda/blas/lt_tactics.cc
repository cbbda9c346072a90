// Build-time tactic timing for MatMul / Gemm on CUDA (builder/tactics.h). For each step, the
// cuBLASLt call its kernel would make at the profile's opt shapes (blas/gemm_problem.h) runs
// with each of the heuristic's first candidates on random data in scratch buffers: warm-up
// runs, then about 2 ms of timed runs between CUDA events. The fastest is recorded in the
// step's "__lt_algo" with the cuBLASLt version; lt_matmul.cc uses it at run time. A MatMulGroup's
// products are then timed as one group GEMM launch against the recorded GEMMs (and the gate
// kernel): "__group_gemm" says which was faster (kernels/matmul_group.cu takes it). A group of one to
// eight rows with weights larger than twice the L2 (an LM head) has its GEMMs timed too, and the
// GEMV / few-row kernel against them: "__few_row"; so is a MatMul of one to eight rows by such a weight
// (an LM head without its norm), against its recorded GEMM.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>

#include "backends/cuda/blas/gemm_problem.h"
#include "backends/cuda/kernels/gate.h"
#include "backends/cuda/kernels/group_gemm.h"
#include "backends/cuda/kernels/half_gemv.h"
#include "backends/cuda/kernels/rms_norm.h"
#include "backends/cuda/kernels/rotary.h"
#include "ops/matmul.h"
#include "ops/matmul_group.h"
#include "core/float16.h"
#include "core/logging.h"

namespace streamrt::cuda {
namespace {

constexpr int kMaxCandidates = 8;
constexpr int kWarmups = 2;
constexpr double kTimedMs = 2.0;  // timed runs per candidate: about this long, 3 to 50 of them
constexpr uint64_t kMaxScratchBytes = uint64_t{4} << 30;  // larger problems keep the heuristic

// Device memory that only grows, filled with random values of one float dtype (or left as it
// is for kUndefined).
struct Scratch {
  void* p = nullptr;
  size_t size = 0;
  DataType filled = DataType::kUndefined;
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (p) cudaFree(p);
  }
  Status reserve(size_t bytes, DataType dtype, cudaStream_t stream);
};

// Uniform [-1, 1) values of `dtype` (a float type) in a host block that is copied over the
// buffer (the pattern repeats every block: enough for timing).
std::vector<uint8_t> random_block(DataType dtype, size_t bytes) {
  std::vector<uint8_t> block(bytes);
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const size_t es = dtype_size(dtype);
  for (size_t i = 0; i + es <= bytes; i += es) {
    const float f = dist(rng);
    const uint16_t half = dtype == DataType::kFloat16 ? Half(f).bits : BFloat16(f).bits;
    if (dtype == DataType::kFloat32) std::memcpy(&block[i], &f, 4);
    else std::memcpy(&block[i], &half, 2);
  }
  return block;
}

Status Scratch::reserve(size_t bytes, DataType dtype, cudaStream_t stream) {
  bytes = std::max<size_t>(bytes, 256);
  if (bytes > size) {
    if (p) cudaFree(p);
    p = nullptr;
    size = 0;
    filled = DataType::kUndefined;
    SRT_CUDA(cudaMalloc(&p, bytes));
    size = bytes;
  }
  if (filled == dtype || dtype == DataType::kUndefined) return ok_status();
  const std::vector<uint8_t> block = random_block(dtype, std::min<size_t>(size, size_t{1} << 20));
  for (size_t off = 0; off < size; off += block.size())
    SRT_CUDA(cudaMemcpyAsync(static_cast<uint8_t*>(p) + off, block.data(), std::min(block.size(), size - off),
                             cudaMemcpyHostToDevice, stream));
  SRT_CUDA(cudaStreamSynchronize(stream));  // `block` is read until then
  filled = dtype;
  return ok_status();
}

// Elements spanned by `batch` row-major matrices of rows x cols (row stride ld), `stride` apart.
int64_t extent(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  return (rows - 1) * ld + cols + (batch - 1) * stride;
}

struct Problem {
  LtGemm g;
  bool bias = false;             // Gemm's C or MatMul's fused bias through the bias epilogue
  std::optional<float> c_beta;   // Gemm's C through beta (its value), the bias epilogue's fallback
};

// The cuBLASLt call of a float MatMul / Gemm step at these input shapes, as its kernel makes it;
// nullopt when the kernel would make none (other ops or types, empty GEMMs).
Result<std::optional<Problem>> step_problem(const ir::Node& step, std::span<const ops::TensorInfo> in) {
  const bool matmul = step.op_type == "MatMul", gemm = step.op_type == "Gemm";
  if (!step.domain.empty() || (!matmul && !gemm) || in.size() < 2) return std::optional<Problem>();
  const DataType dt = in[0].dtype;
  const bool is_float = dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kBFloat16;
  if (!is_float || in[1].dtype != dt || !in[0].has_shape || !in[1].has_shape) return std::optional<Problem>();
  Problem p;
  if (matmul) {
    SRT_ASSIGN_OR_RETURN(MatMulShape s, matmul_shape(step, in[0].dims, in[1].dims));
    if (dims_numel(s.batch) == 0 || s.m == 0 || s.n == 0 || s.k == 0) return std::optional<Problem>();
    const MatMulGemm mg = matmul_gemm(s, dt);
    p.g = mg.g;
    // A fused bias (ops/matmul.h) goes through the epilogue where the kernel makes one call.
    const bool bias = in.size() > 2 && in[2].dtype != DataType::kUndefined;
    p.bias = bias && !mg.per_matrix && p.g.batch == 1;
  } else {
    const bool c_present = in.size() > 2 && in[2].dtype != DataType::kUndefined;
    if (c_present && (in[2].dtype != dt || !in[2].has_shape)) return std::optional<Problem>();
    SRT_ASSIGN_OR_RETURN(ops::GemmAttrs at, ops::read_gemm_attrs(step));
    SRT_ASSIGN_OR_RETURN(GemmShape s, gemm_shape(step, at, in[0].dims, in[1].dims, c_present ? &in[2].dims : nullptr));
    if (s.m == 0 || s.n == 0 || s.k == 0) return std::optional<Problem>();
    p.g = gemm_gemm(at, in[0].dims, in[1].dims, s, dt);
    if (s.has_c) {
      p.bias = gemm_bias_epilogue(at, s);
      p.c_beta = at.beta;
      if (!p.bias) p.g.beta = at.beta;
    }
  }
  p.g.tf32 = builder::step_allows_tf32(step) && dt == DataType::kFloat32;
  if (p.g.batch > (int64_t{1} << 30)) return std::optional<Problem>();  // lt_matmul splits those
  return std::optional<Problem>(p);
}

// The bytes of a MatMulGroup's weights.
uint64_t weight_bytes(const ops::MatMulGroupLayout& l, DataType dt) {
  int64_t cols = 0;
  for (int i = 0; i < l.count; ++i) cols += l.n[static_cast<size_t>(i)];
  return static_cast<uint64_t>(l.k * cols) * dtype_size(dt);
}

// A MatMulGroup's GEMMs, one a weight, as its many-row path makes them (kernels/matmul_group.cu).
// For the rows its GEMV / few-row kernel takes, only where the weights reach `few_row_timed_bytes`
// (they are timed against that kernel then: tune_few_rows).
Result<std::vector<Problem>> group_problems(const ir::Node& step, std::span<const ops::TensorInfo> in,
                                            uint64_t few_row_timed_bytes) {
  std::vector<Problem> out;
  const DataType dt = in.empty() ? DataType::kUndefined : in[0].dtype;
  if (!is_float(dt)) return out;
  SRT_ASSIGN_OR_RETURN(ops::MatMulGroupLayout l, ops::matmul_group_layout(step, in));
  if (l.rows <= 0 || l.k <= 0) return out;
  if (half_gemv_rows(dt, l.rows) && weight_bytes(l, dt) < few_row_timed_bytes) return out;
  for (int i = 0; i < l.count; ++i) {
    MatMulShape s;
    s.m = l.rows, s.k = l.k, s.n = l.n[static_cast<size_t>(i)];
    s.out = {s.m, s.n};
    if (s.n <= 0) return std::vector<Problem>();
    Problem p;
    p.g = matmul_gemm(s, dt).g;
    p.bias = l.bias[static_cast<size_t>(i)];
    p.g.tf32 = builder::step_allows_tf32(step) && dt == DataType::kFloat32;
    out.push_back(p);
  }
  return out;
}

// A MatMulGroup's operands in scratch, as tune_group and tune_few_rows lay them out: the weights side
// by side in one buffer ([k, cols]), the products part after part in another ([rows, n] each), the
// biases (cols) then each rotated part's cos and sin tables ([table_rows, rotary_dim] each) in a third.
struct GroupScratch {
  int64_t cols = 0;    // the parts' N together
  int64_t tables = 0;  // elements of the rotary tables
};

// Nothing where a rotated part has no table rows (nothing to time).
std::optional<GroupScratch> group_scratch(const ops::MatMulGroupLayout& l) {
  GroupScratch s;
  for (int i = 0; i < l.count; ++i) s.cols += l.n[static_cast<size_t>(i)];
  for (size_t i = 0; i < l.rotary.size(); ++i) {
    if (!l.rotary[i]) continue;
    if (l.table_rows[i] < 1) return std::nullopt;
    s.tables += 2 * l.table_rows[i] * l.rotary_dim;
  }
  return s;
}

uint8_t* elems_at(void* base, int64_t elems, size_t es) {
  return static_cast<uint8_t*>(base) + elems * static_cast<int64_t>(es);
}

// Points the parts of `g` (a GroupGemm or a HalfGemv: their Parts have the same fields) at the
// weights w, the products y and the biases; with the gate part 1 writes nothing.
template <class Kernel>
void bind_parts(Kernel& g, const ops::MatMulGroupLayout& l, size_t es, void* w, void* y, void* bias) {
  for (int64_t i = 0, col = 0; i < l.count; col += l.n[static_cast<size_t>(i)], ++i) {
    const size_t ui = static_cast<size_t>(i);
    g.part[ui] = {elems_at(w, l.k * col, es), l.bias[ui] ? elems_at(bias, col, es) : nullptr,
                  elems_at(y, l.rows * col, es), l.n[ui]};
  }
  if (l.gate) g.part[1].y = nullptr;
}

// Gives g's rotated parts their tables (from `tables` on, part after part) so that the kernel rotates
// in its epilogue; returns the same rotations as the in-place kernel's (kernels/rotary.h) calls.
template <class Kernel>
std::vector<RotaryRows> bind_rotary(Kernel& g, const ops::MatMulGroupLayout& l, size_t es, void* tables) {
  std::vector<RotaryRows> rotations;
  for (size_t i = 0, table = 0; i < l.rotary.size(); ++i) {
    if (!l.rotary[i]) continue;
    const int64_t size = l.table_rows[i] * l.rotary_dim;
    g.rotary_dim = l.rotary_dim;
    g.part[i].cos = elems_at(tables, static_cast<int64_t>(table), es);
    g.part[i].sin = elems_at(tables, static_cast<int64_t>(table) + size, es);
    g.part[i].table_rows = l.table_rows[i];
    rotations.push_back({g.part[i].y, g.part[i].cos, g.part[i].sin, l.rows, l.n[i], l.rotary_dim, l.table_rows[i]});
    table += static_cast<size_t>(2 * size);
  }
  return rotations;
}

class LtSession final : public builder::TacticSession {
 public:
  ~LtSession() override;
  Result<bool> tune(ir::Node& step, std::span<const ops::TensorInfo> in) override;
  // Times one GEMM of the step and records the fastest in its attribute `attr`.
  Result<bool> tune_problem(ir::Node& step, const Problem& p, const std::string& attr);
  // After the group's GEMMs are tuned: the group GEMM against their recorded times.
  Result<bool> tune_group(ir::Node& step, std::span<const ops::TensorInfo> in);
  // After tune_group, for one to eight rows: the GEMV / few-row kernel against the many-row path.
  Result<bool> tune_few_rows(ir::Node& step, std::span<const ops::TensorInfo> in);
  // A MatMul of one to eight rows by a 2-D weight: that kernel against the recorded cuBLASLt GEMM.
  Result<bool> tune_few_rows_matmul(ir::Node& step, std::span<const ops::TensorInfo> in);

 private:
  Status ensure_ready();
  // The device's compute capability, SMs and L2 (queried once).
  Status query_device();
  Status bind_scratch(LtGemm& g, bool bias);
  Result<double> time_ms(const LtOperation& op, const LtGemm& g, const cublasLtMatmulAlgo_t& algo);
  // Milliseconds per call of `launch` (enqueues one call on stream_): kWarmups calls, then about
  // kTimedMs of them (3 to 50) between CUDA events. `launch`'s errors are returned as they are.
  Result<double> launches_ms(const std::function<Status()>& launch);
  // Writes "__few_row": the kernel's time against the other path's.
  void record_few_row(ir::Node& step, int64_t rows, double kernel_ms, int64_t steps_ns);

  CudaResources device_;  // compute capability and SMs (stream: stream_), once query_device ran
  uint64_t l2_bytes_ = 0;
  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  Scratch workspace_, a_, b_, d_, bias_;
};

LtSession::~LtSession() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (handle_) cublasLtDestroy(handle_);
  if (stream_) cudaStreamDestroy(stream_);
}

// Device resources, made at the first GEMM to time (most builds of small models have none).
Status LtSession::ensure_ready() {
  if (handle_) return ok_status();
  if (!stream_) SRT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (!start_) SRT_CUDA(cudaEventCreate(&start_));
  if (!stop_) SRT_CUDA(cudaEventCreate(&stop_));
  SRT_RETURN_IF_ERROR(workspace_.reserve(kLtWorkspaceBytes, DataType::kUndefined, stream_));
  SRT_CUBLAS(cublasLtCreate(&handle_));  // last: a handle means everything is ready
  return ok_status();
}

Status LtSession::query_device() {
  if (device_.sm_count > 0) return ok_status();
  int device = 0, l2 = 0;
  SRT_CUDA(cudaGetDevice(&device));
  SRT_CUDA(cudaDeviceGetAttribute(&device_.cc_major, cudaDevAttrComputeCapabilityMajor, device));
  SRT_CUDA(cudaDeviceGetAttribute(&device_.cc_minor, cudaDevAttrComputeCapabilityMinor, device));
  SRT_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  SRT_CUDA(cudaDeviceGetAttribute(&device_.sm_count, cudaDevAttrMultiProcessorCount, device));
  l2_bytes_ = static_cast<uint64_t>(l2);
  return ok_status();
}

// Points g's operands at scratch buffers big enough for them.
Status LtSession::bind_scratch(LtGemm& g, bool bias) {
  const size_t es = dtype_size(g.dtype);
  const int64_t ea = extent(g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch, g.stride_a);
  const int64_t eb = extent(g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch, g.stride_b);
  const int64_t ed = extent(g.m, g.n, g.ldd, g.batch, g.stride_d);
  const uint64_t bytes = static_cast<uint64_t>(ea + eb + ed + (bias ? g.n : 0)) * es;
  size_t free = 0, total = 0;
  SRT_CUDA(cudaMemGetInfo(&free, &total));
  if (bytes > kMaxScratchBytes || bytes > free / 2)
    return unsupported("its operands (" + std::to_string(bytes >> 20) + " MiB) are too large to time");
  SRT_RETURN_IF_ERROR(a_.reserve(static_cast<size_t>(ea) * es, g.dtype, stream_));
  SRT_RETURN_IF_ERROR(b_.reserve(static_cast<size_t>(eb) * es, g.dtype, stream_));
  SRT_RETURN_IF_ERROR(d_.reserve(static_cast<size_t>(ed) * es, g.dtype, stream_));
  g.a = a_.p, g.b = b_.p, g.d = d_.p;
  g.bias = nullptr;
  if (bias) {
    SRT_RETURN_IF_ERROR(bias_.reserve(static_cast<size_t>(g.n) * es, g.dtype, stream_));
    g.bias = bias_.p;
  }
  return ok_status();
}

// A call cuBLASLt refuses is kUnsupported (the candidate is skipped); CUDA errors keep their codes.
Result<double> LtSession::time_ms(const LtOperation& op, const LtGemm& g, const cublasLtMatmulAlgo_t& algo) {
  return launches_ms([&]() -> Status {
    Status st = lt_run(handle_, op, g, algo, workspace_.p, kLtWorkspaceBytes, stream_);
    if (st.ok()) return st;
    SRT_CUDA(cudaStreamSynchronize(stream_));
    return unsupported(st.message());
  });
}

Result<double> LtSession::launches_ms(const std::function<Status()>& launch) {
  double ms = 0;
  int iters = kWarmups;
  for (int round = 0; round < 2; ++round) {
    SRT_CUDA(cudaEventRecord(start_, stream_));
    for (int i = 0; i < iters; ++i) SRT_RETURN_IF_ERROR(launch());
    SRT_CUDA(cudaEventRecord(stop_, stream_));
    SRT_CUDA(cudaEventSynchronize(stop_));
    float elapsed = 0.f;
    SRT_CUDA(cudaEventElapsedTime(&elapsed, start_, stop_));
    ms = static_cast<double>(elapsed) / iters;
    iters = static_cast<int>(std::clamp(kTimedMs / std::max(ms, 1e-3), 3.0, 50.0));
  }
  return ms;
}

Result<bool> LtSession::tune_group(ir::Node& step, std::span<const ops::TensorInfo> in) {
  SRT_ASSIGN_OR_RETURN(ops::MatMulGroupLayout l, ops::matmul_group_layout(step, in));
  int64_t lt_ns = 0;
  for (int i = 0; i < l.count; ++i) {
    auto it = step.attrs.find(builder::lt_algo_attr(i));
    if (it == step.attrs.end()) return false;  // a GEMM without a time: nothing to compare with
    SRT_ASSIGN_OR_RETURN(builder::LtAlgoRecord r, builder::decode_lt_algo(it->second));
    lt_ns += r.best_ns;
  }
  SRT_RETURN_IF_ERROR(query_device());
  CudaResources res = device_;
  const DataType dt = in[0].dtype;
  // What group_gemm_applies needs of the device and type, checked before any scratch is filled (a
  // float32 LM head's operands are large).
  if ((dt != DataType::kFloat16 && dt != DataType::kBFloat16) || res.cc_major != 9 || res.cc_minor != 0) return false;
  const size_t es = dtype_size(dt);
  const std::optional<GroupScratch> s = group_scratch(l);
  if (!s) return false;
  const int64_t cols = s->cols, tables = s->tables;
  const uint64_t bytes = static_cast<uint64_t>(l.rows * l.k + l.k * cols + 2 * l.rows * cols + cols + tables) * es;
  if (bytes > kMaxScratchBytes) return false;
  SRT_RETURN_IF_ERROR(a_.reserve(static_cast<size_t>(l.rows * l.k) * es, dt, stream_));
  SRT_RETURN_IF_ERROR(b_.reserve(static_cast<size_t>(l.k * cols) * es, dt, stream_));
  const int64_t gated = l.gate ? l.rows * l.n[0] : 0;  // the gate kernel's output, after the products
  SRT_RETURN_IF_ERROR(d_.reserve(static_cast<size_t>(l.rows * cols + gated) * es, dt, stream_));
  SRT_RETURN_IF_ERROR(bias_.reserve(static_cast<size_t>(cols + tables) * es, dt, stream_));
  GroupGemm g;
  g.dtype = dt, g.rows = l.rows, g.k = l.k, g.x = a_.p, g.parts = l.count, g.gate = l.gate;
  bind_parts(g, l, es, b_.p, d_.p, bias_.p);
  // The rotations: the group GEMM's epilogue against the in-place kernel after cuBLASLt's GEMMs.
  const std::vector<RotaryRows> rotations = bind_rotary(g, l, es, elems_at(bias_.p, cols, es));
  g.cols = 128;  // every group the kernel takes, it takes at 128 columns
  if (!group_gemm_applies(g, res)) return false;
  if (!rotations.empty()) {
    res.stream = stream_;
    SRT_ASSIGN_OR_RETURN(double rotate_ms, launches_ms([&] { return rotate_rows(res, dt, rotations); }));
    lt_ns += static_cast<int64_t>(rotate_ms * 1e6);
  }
  double best_ms = 0;
  int best_cols = 0;
  for (int width : {128, 256}) {
    g.cols = width;
    if (!group_gemm_applies(g, res)) continue;  // a width that does not take the rotation
    SRT_ASSIGN_OR_RETURN(double ms, launches_ms([&] { return group_gemm(g, res, stream_); }));
    if (best_cols == 0 || ms < best_ms) best_ms = ms, best_cols = width;
  }
  if (l.gate) {
    const int64_t n = l.rows * l.n[0];
    uint8_t* d = static_cast<uint8_t*>(d_.p);
    SRT_ASSIGN_OR_RETURN(double gate_ms, launches_ms([&] {
      return swiglu_gate(stream_, dt, d + 2 * n * static_cast<int64_t>(es), d, d + n * static_cast<int64_t>(es), n);
    }));
    lt_ns += static_cast<int64_t>(gate_ms * 1e6);
  }
  builder::GroupGemmRecord r;
  r.group_ns = static_cast<int64_t>(best_ms * 1e6);
  r.lt_ns = lt_ns;
  r.rows = l.rows;
  r.cols = r.group_ns < r.lt_ns ? best_cols : 0;
  step.attrs[builder::kGroupGemmAttr] = builder::encode_group_gemm(r);
  return true;
}

Result<bool> LtSession::tune_few_rows(ir::Node& step, std::span<const ops::TensorInfo> in) {
  SRT_ASSIGN_OR_RETURN(ops::MatMulGroupLayout l, ops::matmul_group_layout(step, in));
  const DataType dt = in[0].dtype;
  if (!half_gemv_rows(dt, l.rows) || l.k <= 0) return false;
  SRT_RETURN_IF_ERROR(query_device());
  if (weight_bytes(l, dt) < 2 * l2_bytes_) return false;
  // The many-row path's products: what "__group_gemm" chose (its cuBLASLt time has the gate and the
  // rotation in it), else the GEMMs' records where there is no gate or rotation to add.
  int64_t steps_ns = 0;
  if (auto it = step.attrs.find(builder::kGroupGemmAttr); it != step.attrs.end()) {
    SRT_ASSIGN_OR_RETURN(builder::GroupGemmRecord r, builder::decode_group_gemm(it->second));
    steps_ns = r.cols > 0 ? r.group_ns : r.lt_ns;
  } else {
    if (l.gate || l.rotates()) return false;
    for (int i = 0; i < l.count; ++i) {
      auto rec = step.attrs.find(builder::lt_algo_attr(i));
      if (rec == step.attrs.end()) return false;
      SRT_ASSIGN_OR_RETURN(builder::LtAlgoRecord r, builder::decode_lt_algo(rec->second));
      steps_ns += r.best_ns;
    }
  }
  const size_t es = dtype_size(dt);
  const std::optional<GroupScratch> s = group_scratch(l);
  if (!s) return false;
  const int64_t cols = s->cols, tables = s->tables;
  const uint64_t bytes = static_cast<uint64_t>(2 * l.rows * l.k + l.k * cols + l.rows * cols + cols + tables + l.k) * es;
  if (bytes > kMaxScratchBytes) return false;
  SRT_RETURN_IF_ERROR(ensure_ready());
  SRT_RETURN_IF_ERROR(a_.reserve(static_cast<size_t>(2 * l.rows * l.k) * es, dt, stream_));  // A, then A normalized
  SRT_RETURN_IF_ERROR(b_.reserve(static_cast<size_t>(l.k * cols) * es, dt, stream_));
  SRT_RETURN_IF_ERROR(d_.reserve(static_cast<size_t>(l.rows * cols) * es, dt, stream_));
  SRT_RETURN_IF_ERROR(bias_.reserve(static_cast<size_t>(cols + tables + l.k) * es, dt, stream_));
  const void* scale = elems_at(bias_.p, cols + tables, es);
  if (l.norm) {
    SRT_ASSIGN_OR_RETURN(double norm_ms, launches_ms([&] {
      return rms_norm_rows(stream_, dt, a_.p, scale, l.k, elems_at(a_.p, l.rows * l.k, es), l.rows, l.k, l.epsilon);
    }));
    steps_ns += static_cast<int64_t>(norm_ms * 1e6);
  }
  // The kernel as kernels/matmul_group.cu calls it: rotating in its epilogue where it can, else after.
  HalfGemv g;
  g.dtype = dt, g.rows = l.rows, g.k = l.k, g.a = a_.p, g.parts = l.count, g.gate = l.gate;
  if (l.norm) g.norm_scale = scale, g.eps = l.epsilon;
  bind_parts(g, l, es, b_.p, d_.p, bias_.p);
  HalfGemv rotating = g;
  const std::vector<RotaryRows> rotations = bind_rotary(rotating, l, es, elems_at(bias_.p, cols, es));
  CudaResources res = device_;
  res.stream = stream_;
  const bool in_epilogue = !rotations.empty() && half_gemv_applies(rotating, res.cc_major);
  if (!in_epilogue && !half_gemv_applies(g, res.cc_major)) return false;
  SRT_ASSIGN_OR_RETURN(double kernel_ms, launches_ms([&]() -> Status {
    if (in_epilogue) return half_gemv(res, rotating);
    SRT_RETURN_IF_ERROR(half_gemv(res, g));
    return rotations.empty() ? ok_status() : rotate_rows(res, dt, rotations);
  }));
  record_few_row(step, l.rows, kernel_ms, steps_ns);
  return true;
}

Result<bool> LtSession::tune_few_rows_matmul(ir::Node& step, std::span<const ops::TensorInfo> in) {
  if (in.size() < 2 || !in[0].has_shape || !in[1].has_shape || in[1].dims.size() != 2) return false;
  const DataType dt = in[0].dtype;
  const int64_t k = in[1].dims[0], n = in[1].dims[1];
  if (k <= 0 || n <= 0 || in[0].dims.empty() || in[0].dims.back() != k) return false;
  const int64_t rows = dims_numel(in[0].dims) / k;
  if (!half_gemv_rows(dt, rows)) return false;
  // A residual would be one more operand to time on both sides; the large products that reach here
  // (an LM head without its norm) have none.
  const size_t r = ops::kMatMulResidualInput;
  if (in.size() > r && in[r].dtype != DataType::kUndefined) return false;
  SRT_RETURN_IF_ERROR(query_device());
  const size_t es = dtype_size(dt);
  if (static_cast<uint64_t>(k * n) * es < 2 * l2_bytes_) return false;
  auto rec = step.attrs.find(builder::kLtAlgoAttr);
  if (rec == step.attrs.end()) return false;
  SRT_ASSIGN_OR_RETURN(builder::LtAlgoRecord lt, builder::decode_lt_algo(rec->second));
  const bool bias = in.size() > 2 && in[2].dtype != DataType::kUndefined;
  if (static_cast<uint64_t>(rows * k + k * n + rows * n + n) * es > kMaxScratchBytes) return false;
  SRT_RETURN_IF_ERROR(ensure_ready());
  SRT_RETURN_IF_ERROR(a_.reserve(static_cast<size_t>(rows * k) * es, dt, stream_));
  SRT_RETURN_IF_ERROR(b_.reserve(static_cast<size_t>(k * n) * es, dt, stream_));
  SRT_RETURN_IF_ERROR(d_.reserve(static_cast<size_t>(rows * n) * es, dt, stream_));
  SRT_RETURN_IF_ERROR(bias_.reserve(static_cast<size_t>(n) * es, dt, stream_));
  HalfGemv g;
  g.dtype = dt, g.rows = rows, g.k = k, g.a = a_.p;
  g.part[0] = {b_.p, bias ? bias_.p : nullptr, d_.p, n};
  CudaResources res = device_;
  res.stream = stream_;
  if (!half_gemv_applies(g, res.cc_major)) return false;
  SRT_ASSIGN_OR_RETURN(double kernel_ms, launches_ms([&] { return half_gemv(res, g); }));
  record_few_row(step, rows, kernel_ms, lt.best_ns);
  return true;
}

void LtSession::record_few_row(ir::Node& step, int64_t rows, double kernel_ms, int64_t steps_ns) {
  builder::FewRowRecord r;
  r.kernel_ns = static_cast<int64_t>(kernel_ms * 1e6);
  r.steps_ns = steps_ns;
  r.rows = rows;
  r.kernel = r.kernel_ns <= r.steps_ns;
  step.attrs[builder::kFewRowAttr] = builder::encode_few_row(r);
}

Result<bool> LtSession::tune(ir::Node& step, std::span<const ops::TensorInfo> in) {
  std::vector<Problem> problems;
  if (step.op_type == ops::kMatMulGroup && step.domain.empty()) {
    SRT_RETURN_IF_ERROR(query_device());
    SRT_ASSIGN_OR_RETURN(problems, group_problems(step, in, 2 * l2_bytes_));
  } else {
    SRT_ASSIGN_OR_RETURN(std::optional<Problem> p, step_problem(step, in));
    if (p) problems.push_back(*p);
  }
  bool tuned = false;
  for (size_t i = 0; i < problems.size(); ++i) {
    SRT_ASSIGN_OR_RETURN(bool one, tune_problem(step, problems[i], builder::lt_algo_attr(static_cast<int>(i))));
    tuned = tuned || one;
  }
  if (tuned && step.op_type == ops::kMatMulGroup && step.domain.empty()) {
    // The GEMMs' records stand whatever happens here; a broken device ends the tuning.
    Result<bool> group = tune_group(step, in);
    if (!group.ok() && group.status().code() == StatusCode::kDeviceError) return group.status();
    if (!group.ok())
      log_warning("tactics: " + step.describe() + ": the group GEMM was not timed (" + group.status().to_string() +
                  "); cuBLASLt's GEMMs run");
  }
  if (tuned && step.domain.empty() && (step.op_type == ops::kMatMulGroup || step.op_type == "MatMul")) {
    Result<bool> few = step.op_type == "MatMul" ? tune_few_rows_matmul(step, in) : tune_few_rows(step, in);
    if (!few.ok() && few.status().code() == StatusCode::kDeviceError) return few.status();
    if (!few.ok())
      log_warning("tactics: " + step.describe() + ": the few-row kernel was not timed (" + few.status().to_string() +
                  "); it runs");
  }
  return tuned;
}

Result<bool> LtSession::tune_problem(ir::Node& step, const Problem& p, const std::string& attr) {
  SRT_RETURN_IF_ERROR(ensure_ready());
  LtGemm g = p.g;
  SRT_RETURN_IF_ERROR(bind_scratch(g, p.bias));
  std::array<cublasLtMatmulHeuristicResult_t, kMaxCandidates> cand{};
  auto op = std::make_unique<LtOperation>();
  SRT_RETURN_IF_ERROR(op->init(g, static_cast<int32_t>(g.batch)));
  SRT_ASSIGN_OR_RETURN(int count, lt_heuristics(handle_, *op, kLtWorkspaceBytes, cand));
  if (count == 0 && p.bias) {
    // No epilogue algorithm: the kernel copies Gemm's C into Y and accumulates with beta
    // instead, or adds MatMul's bias after a plain GEMM (beta 0).
    g.bias = nullptr;
    if (p.c_beta) g.beta = *p.c_beta;
    op = std::make_unique<LtOperation>();
    SRT_RETURN_IF_ERROR(op->init(g, static_cast<int32_t>(g.batch)));
    SRT_ASSIGN_OR_RETURN(count, lt_heuristics(handle_, *op, kLtWorkspaceBytes, cand));
  }
  if (count == 0) return false;  // the kernel's tiled fallback runs: nothing to choose
  int best = -1;
  double best_ms = 0, first_ms = 0;
  for (int i = 0; i < count; ++i) {
    auto ms = time_ms(*op, g, cand[static_cast<size_t>(i)].algo);
    if (!ms.ok()) {
      if (ms.status().code() != StatusCode::kUnsupported) return ms.status();
      log_verbose("tactics: " + step.describe() + ": candidate #" + std::to_string(i) + " refused: " +
                  ms.status().message());
      continue;
    }
    if (i == 0) first_ms = *ms;
    if (best < 0 || *ms < best_ms) best = i, best_ms = *ms;
  }
  if (best < 0) return false;
  builder::LtAlgoRecord r;
  r.library_version = cublasLtGetVersion();
  r.flags = lt_call_flags(g);
  r.m = g.m, r.n = g.n, r.k = g.k, r.batch = g.batch;
  r.candidates = count;
  r.rank = best;
  r.best_ns = static_cast<int64_t>(best_ms * 1e6);
  r.heuristic_ns = static_cast<int64_t>(first_ms * 1e6);
  std::memcpy(r.algo.data(), &cand[static_cast<size_t>(best)].algo, sizeof(cublasLtMatmulAlgo_t));
  step.attrs[attr] = builder::encode_lt_algo(r);
  return true;
}

class LtTuner final : public builder::TacticTuner {
 public:
  DeviceType device() const override { return DeviceType::kCuda; }
  Result<std::unique_ptr<builder::TacticSession>> open() override {
    return std::unique_ptr<builder::TacticSession>(std::make_unique<LtSession>());
  }
};

struct Registrar {
  Registrar() { builder::register_tactic_tuner(new LtTuner()); }
} registrar;

}  // namespace
}  // namespace streamrt::cuda
