// Tactics: where a step has several implementations (cuBLASLt algorithms, ...), the builder
// times them on the target device at the profile's opt shapes and records the winner in the
// step's attributes; the device kernel reads it back at run time. The builder stays
// device-agnostic: a device backend registers a TacticTuner (the CUDA one times cuBLASLt in
// src/backends/cuda/blas/lt_tactics.cc), and the record's codec below needs no device headers,
// so host-only builds and tests can read and check it.
//
// Step attributes written here (the "__" prefix marks them as streamrt's, never ONNX's):
//   "__tf32"    kInt 1: this float32 MatMul / Gemm / Conv may run on TF32 tensor cores
//               (BuilderConfig::allow_tf32, CUDA only).
//   "__lt_algo" kInts: the cuBLASLt algorithm chosen for a MatMul / Gemm step, 19 int64s:
//     [0]      kLtAlgoMagic ("LTALGO1": the record's layout version)
//     [1]      cuBLASLt version it was chosen with (cublasLtGetVersion())
//     [2]      flags: kLtAlgoTf32 (timed with CUBLAS_COMPUTE_32F_FAST_TF32), kLtAlgoBias (timed
//              with the bias epilogue)
//     [3..6]   m, n, k, batch of the GEMM that was timed (the profile's opt shapes)
//     [7]      candidates timed; [8] rank of the winner in cuBLASLt's heuristic order (0 = the
//              heuristic's own first choice)
//     [9]      the winner's time, [10] the heuristic first choice's time (ns per call)
//     [11..18] the cublasLtMatmulAlgo_t: its 8 uint64 words, bit-cast to int64
//   At run time the kernel uses the algorithm only when the version and the flags match its call
//   and cublasLtMatmulAlgoCheck accepts it for the actual shapes (alignment included); anything
//   else (a malformed record, another cuBLASLt, other shapes) falls back to the heuristic.
//   "__group_gemm" kInts {cols, group_ns, lt_ns, rows}: a MatMulGroup step's products timed as one
//               launch of the group GEMM (kernels/group_gemm.h: every weight, the gate in its
//               epilogue; 128- and 256-column accumulators) against cuBLASLt's recorded GEMMs (and
//               the gate kernel): cols is the faster group GEMM's accumulator width, or 0 when
//               cuBLASLt was faster; group_ns the group GEMM's best time and lt_ns the GEMMs', in ns
//               per call at the opt shapes, whose product has `rows` rows. At run time the kernel takes
//               the group GEMM with those columns where cols > 0, the call has at most
//               kGroupGemmRowsReach x `rows` rows and it applies (RuntimeOptions::group_gemm_kernel
//               overrides). A record of three values (no rows) applies at any row count.
//   "__few_row" kInts {kernel, kernel_ns, steps_ns, rows}: a MatMulGroup step of one to eight rows (the
//               GEMV / few-row kernel's, kernels/half_gemv.h) timed in that kernel against the path it
//               takes for more rows (the normalization, then cuBLASLt's recorded GEMMs or the group GEMM
//               as "__group_gemm" chose, the gate, the rotation), or a MatMul of one to eight rows by a
//               2-D weight (no residual) against its recorded cuBLASLt GEMM: kernel 1 where the kernel was at least
//               as fast, 0 where the many-row path was; the times in ns per call at the opt shapes (`rows`
//               rows). Timed only where the step's weights exceed twice the device's L2 (an LM head):
//               smaller ones would be timed reading L2, which a model's run does not. At run time the
//               choice applies to calls of one row where rows is 1, of two to eight where rows is more.
//   "__conv_algo" kInts: the cuDNN forward algorithm chosen for a Conv step (timed without its
//               epilogue: bias, residual and activation run in streamrt's own kernel), 32 int64s:
//     [0]      kConvAlgoMagic ("CVALGO1")
//     [1]      cuDNN version it was chosen with (cudnnGetVersion())
//     [2]      flags: kConvAlgoTf32 (a float32 step allowed TF32)
//     [3]      cudnnConvolutionFwdAlgo_t (0..7), [4] cudnnMathType_t (0..3), [5] its workspace bytes
//     [6..27]  the convolution as the kernel hands it to cuDNN (ConvProblem): [6] streamrt
//              DataType, [7] group, [8] spatial axes (2 or 3: 1-D runs as 2-D), [9..13] X dims and
//              [14..18] W dims (N, C, spatial..., unused slots 0), [19..21] pads, [22..24] strides,
//              [25..27] dilations (unused slots 0). X is the zero-padded copy when pads are asymmetric.
//     [28]     candidates timed; [29] rank of the winner among them (0 = the first of cuDNN's
//              heuristic order); [30] the winner's time, [31] the first candidate's (ns per call)
//   At run time the kernel uses it only when the cuDNN version, the flags and the problem equal its
//   call's; otherwise (or for a malformed record) cuDNN's heuristic decides, as without a record.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op.h"
#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

inline constexpr const char* kTf32Attr = "__tf32";
inline constexpr const char* kLtAlgoAttr = "__lt_algo";
// The record of a step's GEMM number `part` (a MatMulGroup makes one per weight): kLtAlgoAttr for
// the first, "__lt_algo1", "__lt_algo2" after it.
inline constexpr int kLtAlgoParts = 3;  // GEMMs a step may record (ops::kMatMulGroupMax)
inline std::string lt_algo_attr(int part) { return part == 0 ? kLtAlgoAttr : kLtAlgoAttr + std::to_string(part); }

inline constexpr int64_t kLtAlgoMagic = 0x00314F474C41544CLL;  // "LTALGO1", little-endian bytes
inline constexpr size_t kLtAlgoWords = 8;                       // sizeof(cublasLtMatmulAlgo_t) / 8
inline constexpr size_t kLtAlgoRecordSize = 11 + kLtAlgoWords;
inline constexpr uint32_t kLtAlgoTf32 = 1u << 0;
inline constexpr uint32_t kLtAlgoBias = 1u << 1;

inline constexpr const char* kGroupGemmAttr = "__group_gemm";
// How far past its timed rows a record's choice reaches: the persistent group GEMM measured at or
// within 1 % of cuBLASLt (+ the gate kernel) from 512 to 4096 rows on every Llama-1B / Qwen-0.5B shape
// (H200, docs/benchmarks.md, fourteenth session); past 8x nothing was measured, so cuBLASLt runs.
inline constexpr int64_t kGroupGemmRowsReach = 8;
struct GroupGemmRecord {
  int cols = 0;  // 0: cuBLASLt; 128 / 256: the group GEMM with accumulators of that many columns
  int64_t group_ns = 0, lt_ns = 0;
  int64_t rows = 0;  // rows of the timed product; 0: unknown
};
ir::Attribute encode_group_gemm(const GroupGemmRecord& r);
// kInvalidPlan naming what is wrong: kind, size, cols other than 0 / 128 / 256, negative times.
Result<GroupGemmRecord> decode_group_gemm(const ir::Attribute& a);
// The columns of the group GEMM the step's readable record chose for a product of `rows` rows; 0
// for none (no record, cuBLASLt chosen, or more than kGroupGemmRowsReach x the timed rows).
int step_group_gemm_cols(const ir::Node& step, int64_t rows);

inline constexpr const char* kFewRowAttr = "__few_row";
struct FewRowRecord {
  bool kernel = true;  // false: the many-row path was faster
  int64_t kernel_ns = 0, steps_ns = 0;
  int64_t rows = 0;  // rows of the timed call, 1 to 8
};
ir::Attribute encode_few_row(const FewRowRecord& r);
// kInvalidPlan naming what is wrong: kind, size, a choice other than 0 / 1, negative times, rows.
Result<FewRowRecord> decode_few_row(const ir::Attribute& a);
// Whether a call of `rows` (1 to 8) rows of the step runs the GEMV / few-row kernel: true unless the
// step's readable record, timed at a row count of the same kind (one row, or two to eight), chose
// the many-row path.
bool step_few_row_kernel(const ir::Node& step, int64_t rows);

inline constexpr const char* kConvAlgoAttr = "__conv_algo";
inline constexpr int64_t kConvAlgoMagic = 0x00314F474C415643LL;  // "CVALGO1", little-endian bytes
inline constexpr size_t kConvAlgoRecordSize = 32;
inline constexpr uint32_t kConvAlgoTf32 = 1u << 0;
inline constexpr int64_t kConvAlgoCount = 8;  // cuDNN's forward algorithms (CUDNN_CONVOLUTION_FWD_ALGO_COUNT)
inline constexpr int64_t kConvMathCount = 4;  // cudnnMathType_t values

// A convolution as the CUDA kernel describes it to cuDNN ("__conv_algo" [6..27]).
struct ConvProblem {
  int64_t dtype = 0;  // DataType
  int64_t group = 1;
  int64_t spatial = 2;
  std::array<int64_t, 5> x{}, w{};
  std::array<int64_t, 3> pads{}, strides{}, dilations{};
  bool operator==(const ConvProblem&) const = default;
};

struct ConvAlgoRecord {
  uint64_t library_version = 0;
  uint32_t flags = 0;
  int64_t algo = 0, math = 0, workspace = 0;
  ConvProblem problem;
  int64_t candidates = 0, rank = 0;
  int64_t best_ns = 0, heuristic_ns = 0;
};

ir::Attribute encode_conv_algo(const ConvAlgoRecord& r);
// kInvalidPlan naming what is wrong: kind, size, magic, version, flags, algorithm, math type,
// workspace, an inconsistent problem, candidates and times.
Result<ConvAlgoRecord> decode_conv_algo(const ir::Attribute& a);
// Whether a call of `problem` with `flags` on cuDNN `library_version` may use the recorded algorithm.
bool conv_algo_applies(const ConvAlgoRecord& r, uint64_t library_version, uint32_t flags, const ConvProblem& problem);

struct LtAlgoRecord {
  uint64_t library_version = 0;
  uint32_t flags = 0;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t candidates = 0, rank = 0;
  int64_t best_ns = 0, heuristic_ns = 0;
  std::array<uint64_t, kLtAlgoWords> algo{};
};

ir::Attribute encode_lt_algo(const LtAlgoRecord& r);
// kInvalidPlan naming what is wrong: kind, size, magic, unknown flags, negative or zero fields.
Result<LtAlgoRecord> decode_lt_algo(const ir::Attribute& a);
// Whether a call with `flags` on cuBLASLt `library_version` may try the recorded algorithm.
bool lt_algo_applies(const LtAlgoRecord& r, uint64_t library_version, uint32_t flags);
// True when the step carries "__tf32" = 1 (anything else, e.g. a wrongly typed one, is false).
bool step_allows_tf32(const ir::Node& step);
// One line for `streamrt inspect` ("cuBLASLt algo: heuristic #2 of 8, 12.3 us (#0: 15.1 us) at
// 64x384x256; tf32", "cuDNN conv algo: IMPLICIT_PRECOMP_GEMM, tensor-op math, #1 of 4, ..."), or ""
// when the step has none of the attributes.
std::string describe_tactics(const ir::Node& step);

// Process-wide counts of GEMM calls whose step carried a usable recorded algorithm: run with it,
// or with the heuristic's because cuBLASLt did not accept it for the call (the CUDA kernels
// count; for tests and diagnostics).
struct TacticCounters {
  std::atomic<uint64_t> recorded_runs{0};
  std::atomic<uint64_t> fallback_runs{0};
};
TacticCounters& tactic_counters();

// One build's tuning on a device (handles and scratch memory live as long as the session).
class TacticSession {
 public:
  virtual ~TacticSession() = default;
  // Times the implementations of `step`, whose inputs have the dtypes and static dims of the
  // profile's opt shapes in `inputs` (kUndefined dtype for an omitted input), and records the
  // winner in step.attrs. false: nothing to choose for this step (op, dtype or shape).
  virtual Result<bool> tune(ir::Node& step, std::span<const ops::TensorInfo> inputs) = 0;
};

class TacticTuner {
 public:
  virtual ~TacticTuner() = default;
  virtual DeviceType device() const = 0;
  virtual Result<std::unique_ptr<TacticSession>> open() = 0;
};

// Registers a tuner (from a static initializer). Several may serve one device, each timing its
// own ops (cuBLASLt GEMMs, cuDNN convolutions): find_tactic_tuner then returns one whose sessions
// offer every step to each of them in registration order, until one tunes it.
void register_tactic_tuner(TacticTuner* tuner);
TacticTuner* find_tactic_tuner(DeviceType device);
// The combination find_tactic_tuner returns for several tuners (not owned; for tests).
std::unique_ptr<TacticTuner> combine_tactic_tuners(DeviceType device, std::vector<TacticTuner*> tuners);

// After lowering, for CUDA plans: marks float32 MatMul / Gemm / Conv steps "__tf32" when
// config.allow_tf32, then (unless config.tactics is off) has `tuner` (default: the one
// registered for config.device) time every step whose input shapes are known at the opt
// shapes. A step that fails to tune keeps the run-time heuristic (logged as a warning).
// Fills report->steps_tuned and report->tactic_ms.
Status choose_tactics(plan::PlanData& plan, const BuilderConfig& config, BuildReport* report,
                      TacticTuner* tuner = nullptr);

}  // namespace streamrt::builder
