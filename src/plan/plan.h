// In-memory form of a plan (a serialized engine) and its reader / writer.
//
// A plan file is laid out as:
//   [PlanHeader, 64 bytes, little endian]
//   [metadata: a FlatBuffer (src/plan/plan.fbs, file identifier "SRTP")]
//   [padding to a 4096-byte boundary]
//   [weights section: each weight at a 64-byte aligned offset inside it]
// The header holds the magic "SRTPLAN\0", the format version, the header size, offset/size
// of both sections and an XXH3-64 checksum of each. A weight-stripped plan has
// weights_size == 0 and must be refitted before it runs.
//
// Header rules (what read_plan() enforces):
//   - header_size == 64; metadata_offset == 64 (right after the header); metadata_size > 0;
//   - weights_size == 0  <=>  weights_offset == 0 and weights_checksum == 0 (no section; the
//     file then ends right after the metadata);
//   - otherwise weights_offset is 4096-aligned, after the metadata, and the file ends exactly
//     at weights_offset + weights_size (no trailing bytes) and the padding before it is zero:
//     every byte of the file is checked.
//
// read_plan() maps the file (no second copy of the weights), checks the header, both
// checksums, runs the FlatBuffers verifier and then semantic checks (every index in range,
// every weight inside the weights section, dims and dtypes consistent). Any failure is
// kInvalidPlan with a message naming the problem; a plan of another format version is
// kIncompatible (so is a plan for another device kind, but the runtime that loads it checks
// that: the reader does not know the target device). Nothing proportional to a size claimed
// by the file is allocated before that size is validated against the file.
//
// Semantic checks (verify_plan(), run by read_plan() on every plan):
//   - dtypes are known (never kUndefined); dims are >= -1 and their element count times the
//     dtype size fits in int64 (dynamic dims counted as 1);
//   - steps: every input/output index is -1 or a value index; step outputs are activations or
//     outputs, each produced by at most one step; attribute kinds known, names unique; tensor
//     attributes have static dims and exactly numel * dtype_size bytes;
//   - values: activations lie in the arena ([arena_offset, +arena_size) within
//     PlanData::arena_size, and arena_size >= bytes of max_dims when max_dims is static and
//     of the rank of dims);
//     max_dims is empty or of the rank of dims; weight values name a weight of the same dtype
//     and dims;
//   - inputs/outputs: value index in range, same dtype as the value; min/opt/max each empty or
//     of the rank of dims, static, min <= opt <= max, and equal to dims where dims is static;
//     an input's three all given or all empty;
//   - inputs/outputs' capacity layout (seq_capacity / seq_axis, plan/capacity_layout.h): 0 / 0,
//     or a tensor with seq_axis < rank, max (or, without one, the static dims) <= seq_capacity
//     along it, and the element count at that capacity in int64; every step's input and output
//     is read / written in the layout its op declares (ops::OpSchema::capacity_layouts, dims-only
//     inputs aside), which must be its value's: only engine I/O tensors are stored with capacity;
//   - weights: static dims, size == numel * dtype_size, offset 64-aligned, unique names, and
//     (unless stripped) [offset, offset + size) inside the weights section;
//   - step_ms: empty or one per step, each finite and >= 0; min_run_ms finite and >= 0;
//   - arena layout: every activation's arena_offset is kArenaAlignment-aligned; two activations
//     alive at once (first producing step to last reading step) share no arena byte, unless
//     one is a view of the other (a Reshape / Flatten / Squeeze / Unsqueeze / Identity step
//     whose output has its input's offset and size, as builder/lowering.cc plans them).
// Step checks (verify_plan_steps(), run by read_plan() once the weights are mapped): every
// step's shape rule runs again at the profile's max input dims, after its op's verify hook
// (ops::OpSchema::verify: attribute ranges the rule does not bound), and each output whose
// dims the rule knows must have the recorded dtype, agree with the recorded dims, equal
// max_dims and (activations) fit its arena slot. So no attribute or weight can make a kernel
// allocate beyond the plan's declared memory at its largest inputs, or index out of range.
// A stripped plan (weights_stripped) has no weights section; one that is not stripped has
// one whenever its weights hold any bytes (their views point into it).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace streamrt::plan {

inline constexpr char kPlanMagic[8] = {'S', 'R', 'T', 'P', 'L', 'A', 'N', '\0'};
inline constexpr uint32_t kPlanFormatVersion = 1;
inline constexpr uint64_t kWeightsAlignment = 4096;
inline constexpr uint64_t kWeightAlignment = 64;
inline constexpr uint64_t kArenaAlignment = 64;  // activations' offsets (the memory planner's)

#pragma pack(push, 1)
struct PlanHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t header_size;  // sizeof(PlanHeader)
  uint64_t metadata_offset;
  uint64_t metadata_size;
  uint64_t weights_offset;  // multiple of kWeightsAlignment (0 when stripped)
  uint64_t weights_size;
  uint64_t metadata_checksum;  // XXH3_64bits of the metadata bytes
  uint64_t weights_checksum;   // XXH3_64bits of the weights section (0 when stripped)
};
#pragma pack(pop)
static_assert(sizeof(PlanHeader) == 64);

enum class DeviceKind : uint8_t { kCpu = 0, kCuda = 1 };

struct DeviceInfo {
  DeviceKind kind = DeviceKind::kCpu;
  int32_t cc_major = 0;  // CUDA compute capability (0 on the CPU)
  int32_t cc_minor = 0;
  std::string name;      // e.g. "NVIDIA H100 80GB HBM3" or "cpu"
};

// One tensor of the engine. Activations live in the arena at `arena_offset`; I/O tensors
// are bound by the user; weights live in the weights section.
struct ValueEntry {
  enum class Kind : uint8_t { kActivation = 0, kInput = 1, kOutput = 2, kWeight = 3 };
  std::string name;
  DataType dtype = DataType::kUndefined;
  Dims dims;                 // may hold -1; max_dims is what memory was planned for
  Dims max_dims;
  Kind kind = Kind::kActivation;
  uint64_t arena_offset = 0;  // kActivation only
  uint64_t arena_size = 0;    // bytes reserved (kActivation only)
  int32_t weight_index = -1;  // kWeight only: index into PlanData::weights
  ir::SeqType seq;            // sequence / optional values (dtype kUInt8, rank 1); kTensor else
};

struct IoTensor {
  std::string name;
  int32_t value = -1;  // index into PlanData::values
  DataType dtype = DataType::kUndefined;
  Dims dims;            // -1 for dynamic
  Dims min, opt, max;   // optimization profile (inputs; equal to dims when static)
  // Stored with room for seq_capacity entries along seq_axis (TensorDesc::seq_capacity); 0: dense.
  int64_t seq_capacity = 0;
  int32_t seq_axis = 0;
};

struct WeightEntry {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Dims dims;
  uint64_t offset = 0;  // from the start of the weights section, kWeightAlignment-aligned
  uint64_t size = 0;    // bytes = numel * dtype_size
  bool streamable = false;
};

struct PlanData {
  std::string name;
  std::string streamrt_version;
  DeviceInfo device;
  std::vector<ValueEntry> values;
  std::vector<IoTensor> inputs;
  std::vector<IoTensor> outputs;
  // The step list: node inputs/outputs are indices into `values` (-1 = omitted).
  std::vector<ir::Node> steps;
  std::vector<WeightEntry> weights;
  uint64_t arena_size = 0;
  bool weights_stripped = false;
  // Per step: GPU ms measured at build time at the profile's max shapes (weight-streaming builds
  // on CUDA; empty when not measured, else one per step, 0 for steps not timed).
  std::vector<float> step_ms;
  // GPU ms of one run at the profile's min shapes replayed as a CUDA graph, measured at build with
  // step_ms (0: not measured).
  float min_run_ms = 0;
  // Weight contents, parallel to `weights`. On write they are copied into the file (unless
  // stripped); on read they are views into the mapped file (empty when stripped).
  std::vector<Tensor> weight_data;
};

// Serializes to bytes / to a file (written to a temporary name, then renamed).
// weights[i].offset/size are (re)computed here from dims and dtype. Unless the plan is
// stripped, weight_data must be parallel to weights with matching dtype and dims
// (kInvalidArgument otherwise). Semantic validity is the caller's: see verify_plan().
Result<std::vector<uint8_t>> serialize_plan(PlanData& plan);
Status write_plan(PlanData& plan, const std::string& path);

// Runs the semantic checks listed at the top of this file on `plan`; `weights_section_size`
// bounds the weights (ignored when plan.weights_stripped). kInvalidPlan naming the field and
// its values (without a "plan ..." prefix: callers add their own context).
Status verify_plan(const PlanData& plan, uint64_t weights_section_size);
// Runs the step checks listed at the top of this file; weights' contents are plan.weight_data
// (unless stripped). kInvalidPlan naming the step, output and field. An op this streamrt does
// not have is left to the runtime (kIncompatible at load).
Status verify_plan_steps(const PlanData& plan);
// The step list as an ir::Graph for shape passes: values as declared (has_shape), weights as
// constants (unless stripped), inputs and outputs in order.
ir::Graph step_graph(const PlanData& plan);

// Low level, for tools and tests: assembles a plan file from `plan` exactly as given
// (weights' offset/size are NOT recomputed, weight_data is ignored, nothing is validated)
// around the raw `weights_section` bytes, with a correct header and checksums. Lets tests
// build semantically broken plans that pass the checksum and verifier stages.
Result<std::vector<uint8_t>> assemble_plan(const PlanData& plan,
                                           std::span<const uint8_t> weights_section);

// A plan read back: metadata plus the mapping that holds the weights.
struct LoadedPlan {
  PlanData data;
  std::shared_ptr<const void> mapping;  // keeps the file mapped while weight views live
  uint64_t file_size = 0;
  const uint8_t* base = nullptr;  // first byte of the plan (file or memory)
  // True when the bytes are a read-only mapping of the plan file: its pages can be dropped
  // from the resident set and read again from the file (weight streaming on the CPU).
  bool file_backed = false;
  // The weights section when it is held apart from the plan (read_plan_external), in memory the
  // loader owns: null otherwise. The weight views point into it and keep it alive.
  const uint8_t* external_weights = nullptr;
  uint64_t external_weights_size = 0;
};

// Maps and fully verifies a plan file (see the top of this file).
Result<LoadedPlan> read_plan(const std::string& path);
// Verifies a plan held in memory (the bytes must outlive the result; `holder` keeps them;
// it may be null when the caller guarantees that). Bytes not 64-byte aligned are first
// copied into an aligned buffer, so weight views are always 64-byte aligned.
Result<LoadedPlan> read_plan_bytes(const uint8_t* data, size_t size, std::shared_ptr<const void> holder);

// A plan file cut in two: its header and metadata ([0, metadata_end)) and its weights section
// ([weights_offset, +weights_size); empty for a plan without one). Runs the header checks only.
struct PlanParts {
  uint64_t metadata_end = 0;
  uint64_t weights_offset = 0;
  uint64_t weights_size = 0;
};
Result<PlanParts> plan_parts(const uint8_t* data, size_t size);
// Verifies a plan whose weights section is held apart (ExecuTorch named data, a .ptd file):
// `data` is the plan file up to the end of its metadata (its header still gives the weights
// section's offset, size and checksum), `weights` that section, in memory that `weights_holder`
// keeps alive. Every check of read_plan_bytes runs, the section's size and checksum against the
// header's as for an inline section. The weights are used in place (never copied) when at least
// kExternalWeightsAlignment-aligned, which every dtype's element needs; else copied into
// aligned memory (a warning says so).
inline constexpr uint64_t kExternalWeightsAlignment = 16;
Result<LoadedPlan> read_plan_external(const uint8_t* data, size_t size, std::shared_ptr<const void> holder,
                                      const uint8_t* weights, uint64_t weights_size,
                                      std::shared_ptr<const void> weights_holder);

}  // namespace streamrt::plan
