// Running engines: Runtime -> Engine (a loaded plan) -> ExecutionContext (one inference
// stream's state). An Engine is immutable once loaded and may be shared by several
// contexts running on several threads at once; a context is used by one thread at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "streamrt/builder.h"
#include "streamrt/sequence.h"
#include "streamrt/status.h"
#include "streamrt/types.h"

namespace streamrt {

// The CUDA kernel that runs fused Attention steps (src/backends/cuda/kernels/attention.cu).
enum class AttentionKernel : uint8_t {
  kAuto = 0,    // tensor cores (float16 / bfloat16, head size 64 / 128 / 256), else the warp-per-row kernel
  kSimple = 1,  // the warp-per-row kernel for every call: tells the kernels apart without a rebuild
  kMma = 2,     // the mma.sync tensor-core kernel also where the sm_90 warpgroup-MMA kernel would run
  kWgmma = 3,   // the sm_90 warpgroup-MMA kernel for every prefill it can run, below auto's length rules too
};
const char* attention_kernel_name(AttentionKernel k);               // "auto" | "simple" | "mma" | "wgmma"
Result<AttentionKernel> parse_attention_kernel(const std::string& s);  // kInvalidArgument otherwise

// What runs a MatMulGroup step's products of more rows than the GEMV takes
// (src/backends/cuda/kernels/matmul_group.cu).
enum class GroupGemmKernel : uint8_t {
  kAuto = 0,      // the one-launch group GEMM where the build timed it faster than cuBLASLt ("__group_gemm")
  kCublasLt = 1,  // cuBLASLt, a GEMM a weight (and the gate kernel), whatever the build chose
  kGroup = 2,     // the group GEMM wherever it takes the operands (sm_90), whatever the build chose
};
const char* group_gemm_kernel_name(GroupGemmKernel k);                // "auto" | "cublaslt" | "group"
Result<GroupGemmKernel> parse_group_gemm_kernel(const std::string& s);  // kInvalidArgument otherwise

struct RuntimeOptions {
  // Device to run on; unset = CUDA when a GPU is present, else the CPU.
  std::optional<DeviceType> device;
  // CUDA: per-thread stack the device reserves for every thread it can hold at once (the driver's
  // default, 1 KiB, is 264 MiB on an H100). Creating the runtime lowers the device's limit to this
  // when it is higher; 0 leaves it alone. 512 covers every streamrt kernel (the deepest uses 416
  // bytes); a kernel of another library that needs more makes the driver raise it at that launch.
  // The limit is per device and process-wide, so it also applies to other libraries' kernels.
  size_t cuda_thread_stack_bytes = 512;
  // CUDA weight streaming: an eager run ends by copying the next run's first streamed steps (their
  // slots are free once this run's last readers finish), so the copy engine works through the run's
  // tail and the host's turnaround (a decode loop's next token) instead of standing idle
  // (docs/benchmarks.md, eighth session: 1B decode at budget 0, int4 1.7 % and fp16 0.6 % faster).
  // A CUDA graph's own copies wait for them; refit and budget changes already need that no context
  // exist. False: every run copies its own weights, nothing is left in flight between runs.
  bool stream_next_run_ahead = true;
  // Diagnostics, CUDA only (the CPU ignores them). Every execution context of every engine this
  // runtime loads takes them. The CLI maps `streamrt run --profile / --step-times / --stream-trace
  // / --attention-kernel` (and, for compatibility, STREAMRT_PROFILE, STREAMRT_STEP_TIMES,
  // STREAMRT_STREAM_TRACE, STREAMRT_ATTENTION_KERNEL) onto them; the library reads no environment.
  // A table of GPU time per op type and output dims (CUDA events around every device step of
  // every eager run after the first), printed to stderr when a context goes away: streamrt's
  // `trtexec --dumpProfile`. It never synchronizes the stream.
  bool profile = false;
  // When a context goes away, append its mean GPU time per step, next to the residency planner's
  // estimate, to this file as JSON lines (docs/weight-streaming.md); "" = off.
  std::string step_times_path;
  // Append the streamed-weight timeline of every profiled run (ExecutionContext::
  // set_streaming_profiling) to this file, one JSON line per run; "" = off.
  std::string stream_trace_path;
  AttentionKernel attention_kernel = AttentionKernel::kAuto;
  // float16 / bfloat16 products of two to eight rows by a weight (a batch of decode tokens) run the
  // tensor-core kernel of kernels/few_row_gemm.cu; false sends them to cuBLASLt: a switch for telling
  // the two apart on a GPU (`streamrt run --no-few-row-kernel`).
  bool few_row_kernel = true;
  // Telling the group GEMM and cuBLASLt apart on a GPU without a rebuild (`streamrt run
  // --group-gemm-kernel`).
  GroupGemmKernel group_gemm_kernel = GroupGemmKernel::kAuto;
  // sm_90 and later: the decode path's kernels (one- and few-row products, rotary, the tensor-core
  // attention kernel and its combine pass) are launched as programmatic dependent launches, so each
  // is scheduled and fetches its first weights while the step before it ends
  // (kernels/dependent_launch.cuh; off: `streamrt run --no-programmatic-launch`). The few-row
  // kernel stays a usual launch (few_row_gemm.cu says why); measured in docs/benchmarks.md
  // (seventeenth session).
  bool programmatic_launch = true;
};

struct TensorDesc {
  std::string name;
  bool is_input = false;
  DataType dtype = DataType::kUndefined;
  Dims dims;            // -1 for dynamic
  Dims min, opt, max;   // profile (inputs); for outputs `max` is the planned max shape
  // A sequence / optional value (streamrt/sequence.h): then dtype is kUInt8 and dims [-1] (its
  // encoding's bytes), elem_dtype the element type of its tensors.
  ValueKind kind = ValueKind::kTensor;
  DataType elem_dtype = DataType::kUndefined;
  // KV-cache layout (BuilderConfig::kv_cache_in_place): when seq_capacity > 0 the tensor's data
  // has room for seq_capacity entries along axis seq_axis. Its dims stay the logical ones (a past
  // of P positions is [B, H, P, D]), but element (i0, .., s, .., ik) sits where it would if dim
  // seq_axis were seq_capacity: for [B, H, P, D] at ((b * H + h) * seq_capacity + s) * D + d. A
  // buffer bound to it holds storage_bytes(dims). 0: dense.
  int64_t seq_capacity = 0;
  int32_t seq_axis = 0;
  // Bytes a buffer bound to this tensor at `dims` must hold: dense, or at seq_capacity along
  // seq_axis (saturates at UINT64_MAX instead of overflowing).
  uint64_t storage_bytes(const Dims& dims) const;
};

// Host copies between a dense tensor of `dims` and the storage layout of `desc` at those dims
// (identical for a dense desc): what a caller does to hand a cache it holds densely to an engine
// built with kv_cache_in_place, or to read a present back. `dense` holds dims_numel(dims) elements,
// `stored` desc.storage_bytes(dims) bytes; entries beyond dims in `stored` are left as they are.
Status pack_to_storage(const TensorDesc& desc, const Dims& dims, const void* dense, void* stored);
Status unpack_from_storage(const TensorDesc& desc, const Dims& dims, const void* stored, void* dense);

// A plan's weights section held apart from the plan, in memory its loader owns (ExecuTorch named
// data, e.g. mapped from a .ptd file): exactly the bytes an inline section would hold.
struct ExternalWeights {
  const void* data = nullptr;
  uint64_t size = 0;
  // Runs once, when the engine no longer needs `data` (it is destroyed, or loading failed).
  std::function<void()> release;
};

class ExecutionContext;
struct EngineState;
struct EngineFactory;

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  ~Engine();
  const std::string& name() const;
  DeviceType device() const;
  // Inputs first, then outputs, in the model's order.
  std::vector<TensorDesc> io_tensors() const;
  // Number of execution steps (kernels) in the plan.
  size_t num_steps() const;
  // Device memory one context needs: activations (planned for the profile's max shapes) plus,
  // for an engine that streams weights, the streaming scratch (its ring of weight slots).
  uint64_t device_memory_size() const;
  // Total bytes of weights held by the plan.
  uint64_t weights_size() const;
  // True when the plan was built without weights and not yet refitted with every one of them
  // (streamrt/refit.h); such an engine cannot create execution contexts (kInvalidState).
  bool weights_stripped() const;
  // A new, independent execution context.
  Result<std::unique_ptr<ExecutionContext>> create_execution_context();
  // Number of execution contexts of this engine alive now.
  size_t num_execution_contexts() const;

  // ---- Weight streaming (plans built with BuilderConfig::weight_streaming) ----
  // Bytes of weights that may stream from host memory (0 for a plan built without the flag).
  uint64_t streamable_weights_size() const;
  // Device bytes allowed for streamable weights; the rest stream from host memory during each
  // run. A value above streamable_weights_size() is clamped to it (nothing streams); 0 streams
  // every streamable weight. kInvalidState while execution contexts exist; kUnsupported when
  // the engine has no streamable weights; kOutOfMemory when the resident weights do not fit
  // (the previous budget stays in force).
  Status set_weight_streaming_budget(uint64_t bytes);
  // The budget in force. After load it is the automatic one.
  uint64_t weight_streaming_budget() const;
  // Free device memory now, minus one context's activations and scratch, the non-streamable
  // weights and a safety margin, clamped to [0, streamable_weights_size()].
  uint64_t weight_streaming_automatic_budget() const;
  // Device memory each context needs for weights in flight at the budget in force (0 when
  // nothing streams); included in device_memory_size().
  uint64_t weight_streaming_scratch_size() const;
  // The memory contract: the least device memory this engine runs in — its weights that never
  // stream, plus one context's activations, streaming scratch at budget 0 and library
  // workspace. The automatic budget is the memory free beyond this (and a small margin); a load
  // where even this does not fit fails (kOutOfMemory naming both figures). Once loaded, the
  // engine holds one context's memory, so the first context is always created and runs.
  uint64_t minimum_device_memory() const;

  const EngineState& state() const { return *state_; }

 private:
  friend class Runtime;
  friend struct EngineFactory;  // src/runtime/timing_engine.h
  explicit Engine(std::unique_ptr<EngineState> state);
  std::unique_ptr<EngineState> state_;
};

class Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> create(const RuntimeOptions& options = {});
  DeviceType device() const { return device_; }
  const RuntimeOptions& options() const { return options_; }
  // Maps and verifies a plan file; a plan for another device is kIncompatible.
  Result<std::shared_ptr<Engine>> load_engine(const std::string& plan_path);
  // Same for a plan held in memory (the bytes are moved into the engine).
  Result<std::shared_ptr<Engine>> load_engine_bytes(std::vector<uint8_t> bytes);
  // A plan whose weights section is held apart: `plan` is the plan file up to the end of its
  // metadata (plan::plan_parts; the header still gives the section's size and checksum),
  // `weights` the section. Both are verified as an inline plan is (a size or checksum that
  // differs from the header's is kInvalidPlan). The engine reads the weights in place, with no
  // host copy of its own (unless `weights.data` is not 16-byte aligned); on CUDA the streamable
  // ones are registered as pinned memory where the driver allows, else copied into pinned
  // memory as from a plan file. An engine loaded so cannot be refitted on CUDA.
  Result<std::shared_ptr<Engine>> load_engine_bytes(std::vector<uint8_t> plan, ExternalWeights weights);

 private:
  Runtime(DeviceType device, const RuntimeOptions& options) : device_(device), options_(options) {}
  DeviceType device_;
  RuntimeOptions options_;
};

class ContextImpl;

// Memory on a device (host memory for the CPU), owned; for tools, tests and callers that do not
// manage device memory themselves.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  static Result<DeviceBuffer> allocate(DeviceType device, size_t bytes);
  void* data() const { return data_; }
  size_t size() const { return size_; }
  // Synchronous copies; `bytes` must not exceed size().
  Status copy_from_host(const void* src, size_t bytes);
  Status copy_to_host(void* dst, size_t bytes) const;

 private:
  DeviceType device_ = DeviceType::kCpu;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// What one run did with streamed weights (all zero when nothing streams).
struct StreamingStats {
  uint64_t bytes_streamed = 0;   // host -> device (or file -> memory on the CPU) this run
  uint64_t weights_streamed = 0; // number of weight transfers
  double copy_ms = 0;            // time the copies took (CUDA: copy stream busy time)
  double stall_ms = 0;           // time compute waited for copies
  double run_ms = 0;             // the run's wall / stream time
  // Fraction of copy time hidden behind compute: 1 - stall / copy (1 when nothing streams).
  double overlap() const { return copy_ms > 0 ? 1.0 - std::min(stall_ms, copy_ms) / copy_ms : 1.0; }
};

// How a run used CUDA graphs (ExecutionContext::set_cuda_graph): all zero for an eager run.
struct CudaGraphStats {
  uint64_t steps = 0;           // steps of the plan
  uint64_t replayed_steps = 0;  // steps run by replaying a captured graph
  uint64_t graph_launches = 0;  // graphs launched (one for a whole run; one per segment when pieces replay)
  uint64_t captures = 0;        // graphs captured during the run
};

class ExecutionContext {
 public:
  ~ExecutionContext();
  // Sets the dims of a dynamic input; kInvalidArgument naming the tensor and the profile's
  // bounds when outside [min, max].
  Status set_input_shape(const std::string& name, const Dims& dims);
  // Binds memory to an input or output: host memory on the CPU, device memory on CUDA.
  // `capacity` (bytes) is checked against the tensor's size at run time.
  Status set_tensor_address(const std::string& name, void* data, size_t capacity = SIZE_MAX);
  // Binds a sequence / optional input (TensorDesc::kind not kTensor; streamrt/sequence.h): the
  // context copies `value` into memory of its own on the device. kInvalidArgument when the kind
  // or element type differs from the input's, or a tensor's bytes do not match its dims.
  Status set_sequence_input(const std::string& name, const SequenceValue& value);
  // A sequence / optional output of the last run, copied to the host. An output of this kind
  // needs no set_tensor_address (the context holds it); kInvalidState before a run.
  Result<SequenceValue> sequence_output(const std::string& name) const;
  // Current dims: inputs after set_input_shape; outputs after a run, or before one when the
  // shape rules can tell from the input dims (and, on the CPU, bound shape-tensor inputs).
  Result<Dims> tensor_shape(const std::string& name) const;
  // Enqueues a run on `stream` (a cudaStream_t on CUDA; ignored on the CPU) and returns.
  Status enqueue(void* stream);
  // Runs synchronously on the bound tensors.
  Status execute();
  // CUDA only: capture runs as CUDA graphs. A run with the input dims and bound addresses of the
  // previous one is captured whole and replayed while they stay the same. When they change from
  // run to run (a decode loop: the KV cache grows a position each token) and no weight streams,
  // the steps whose dims, addresses and host-computed inputs did not change are captured in
  // pieces between the ones that did, which run as usual, and each piece is replayed while its
  // steps stay the same (docs/design.md, "CUDA graphs"); with streamed weights such runs are
  // eager. A whole-run capture that needs device data on the host mid-way (data-dependent
  // shapes) fails with kUnsupported.
  Status set_cuda_graph(bool enable);
  // CUDA graph use of the last run (zeros without set_cuda_graph); kUnsupported on the CPU.
  Result<CudaGraphStats> last_run_graph_stats() const;
  // Record copy and stall times of streamed weights (CUDA events per streamed step; off by
  // default because events cost a little). bytes_streamed is always counted.
  void set_streaming_profiling(bool enable);
  // Statistics of the last completed run; on CUDA call after the stream was synchronized.
  Result<StreamingStats> last_run_stats() const;
  // Per-step timing (TensorRT's IProfiler, pulled): with it on, each eager run records every
  // device step's time (CUDA events; CUDA graph replays are not timed). last_step_times_ms()
  // gives the last completed run's ms per plan step (0 for host steps); kInvalidState before a
  // timed run, kUnsupported on the CPU.
  void set_step_timing(bool enable);
  Result<std::vector<double>> last_step_times_ms() const;

 private:
  friend class Engine;
  ExecutionContext(std::unique_ptr<ContextImpl> impl, std::shared_ptr<Engine> engine);
  std::unique_ptr<ContextImpl> impl_;
  std::shared_ptr<Engine> engine_;  // counted in Engine::num_execution_contexts()
};

}  // namespace streamrt
