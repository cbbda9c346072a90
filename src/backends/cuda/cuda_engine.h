// Per-engine CUDA state: where each step runs, the weights' device copies and, for an engine
// that streams weights, which stay resident at the budget in force and where the others go.
#pragma once

#include <atomic>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "runtime/engine_state.h"
#include "runtime/residency_planner.h"

namespace streamrt::cuda {

// Weight slots per context: the step that runs and two prefetched (prefetch depth 2).
inline constexpr int kStreamSlots = 3;
// The library workspace each context starts with (cuBLASLt's recommended size on Hopper).
inline constexpr uint64_t kContextWorkspace = 32ull << 20;
// What the memory contract counts for a context's cuBLASLt and cuDNN handles, streams and events
// (an allowance; the reservation below creates the first context's handles at load, so they are
// never made on a full device).
inline constexpr uint64_t kContextHandles = 8ull << 20;

// One context's device resources, made when the engine loads and (the block) again whenever its
// budget changes, so that a loaded engine can always make a context and run however full the
// device gets meanwhile: `block` (the arena, then the streaming scratch), the library handles and
// the workspace. The first context takes them over and gives them back when it ends (its
// workspace as grown); contexts beyond the first make their own.
struct ContextReservation {
  void* block = nullptr;
  uint64_t arena = 0, scratch = 0;  // the block's parts, each 256-aligned
  cublasLtHandle_t cublaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  void* workspace = nullptr;
  size_t workspace_size = 0;
  std::atomic<bool> taken{false};
  uint64_t bytes() const { return arena + scratch + kContextWorkspace + kContextHandles; }
};

struct CudaEngineState {
  // Per step: run on the host with the CPU kernel. Steps that compute shape tensors (values
  // some step reads as shapes: Shape -> Gather -> Concat -> Reshape) run there, and so does
  // any op without a CUDA kernel (a warning names it at load).
  std::vector<uint8_t> host_step;
  std::vector<CudaKernelFn> kernels;  // per step; null for host steps
  int device = 0;

  // Device copies: non-streamable weights in `fixed`, uploaded at load; streamable weights kept
  // resident at the budget in `resident`, re-made when the budget changes.
  void* fixed = nullptr;
  void* resident = nullptr;
  uint64_t fixed_bytes = 0, resident_bytes = 0;
  std::vector<void*> weight_dev;  // per plan weight: its device copy, or null (streamed / host only)
  // Per plan weight: the device copy of a streamed weight's resident prefix
  // (ResidencyPlan::resident_prefix, in `resident`), copied into the slot before its remainder.
  std::vector<void*> prefix_dev;

  // Streaming at the budget in force.
  ResidencyPlan residency;
  std::vector<std::vector<int32_t>> step_streamed;      // per step: streamed weights it reads
  std::vector<std::vector<uint64_t>> step_slot_offset;  // per step: their offsets in a slot
  std::vector<size_t> streamed_steps;                   // steps with streamed weights, in order
  uint64_t slot_bytes = 0;
  // Streamable weights in pinned host memory, read once from the plan at load (pages of the
  // mapping are dropped as they are copied, so the process never holds two copies); the
  // copies the streamer issues from there are asynchronous.
  void* pinned = nullptr;
  std::vector<const void*> host_src;  // per plan weight: its pinned copy (streamable ones)
  // Weights held apart from the plan (plan::LoadedPlan::external_weights) are registered with
  // CUDA in place instead (cudaHostRegister, read-only where the device allows): host_src then
  // points into the loader's memory, this is the start of the registered range, and refit is
  // refused (that memory is not ours to write).
  void* registered = nullptr;

  mutable ContextReservation reservation;

  ~CudaEngineState();
  void* weight_ptr(int32_t index) const { return weight_dev[index]; }
  // Bytes of streamed weight `w` that come from its resident prefix (0 when none is placed).
  uint64_t prefix_bytes(int32_t w) const { return prefix_dev[w] ? residency.resident_prefix[w] : 0; }
  uint64_t scratch_bytes() const { return streamed_steps.empty() ? 0 : kStreamSlots * slot_bytes; }
};

// Whether the step reads only input `input`'s dims, never its contents (OpSchema::dims_only_inputs:
// Shape, Size).
bool reads_dims_only(const ir::Node& step, size_t input);

// Decides host vs device placement of the steps (see host_step above).
void place_steps(const EngineState& es, CudaEngineState& ces, std::vector<std::string>* fallbacks);

// Uploads the weights device steps read that are not streamable into one device block, and
// reads streamable ones into pinned host memory.
Status upload_weights(const EngineState& es, CudaEngineState& ces);

// What the residency planner assumes of this GPU (the host-to-device bandwidth is measured once).
DeviceProfile cuda_profile();

// The residency plan at `budget` on this GPU. Tables only Gathers read are read in place from
// pinned host memory outside the budget (ResidencyPlan::read_in_place), never streamed.
ResidencyPlan plan_cuda_residency(const EngineState& es, const CudaEngineState& ces, uint64_t budget);
// Applies es.budget: the resident set's device block and each step's streamed weights.
Status apply_budget(const EngineState& es, CudaEngineState& ces);
// (Re)allocates the reservation for the arena and the scratch at the budget in force (no context
// alive). kOutOfMemory naming the bytes needed and free.
Status reserve_context_memory(const EngineState& es, CudaEngineState& ces);
// A new context needing `arena` and `scratch` bytes takes the reservation (true) unless another
// holds it or it was made for other sizes; it hands back the handles and workspace it used with
// return_reservation when it ends.
bool take_reservation(const CudaEngineState& ces, uint64_t arena, uint64_t scratch);
void return_reservation(const CudaEngineState& ces, const CudaResources& used);

}  // namespace streamrt::cuda
