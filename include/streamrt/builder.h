// Building an engine (plan) from an ONNX model.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "streamrt/status.h"
#include "streamrt/tensor.h"
#include "streamrt/types.h"

namespace streamrt {

// min / opt / max dims of one input for the optimization profile. The memory plan is
// sized for max; at run time set_input_shape accepts any dims within [min, max].
struct ShapeProfile {
  Dims min, opt, max;
};

// Optimization passes and build-time measurements that can be switched off (or, conv_tactics,
// on), for comparing a fused kernel with the unfused ops or ruling a pass out. Each changes the
// plan, so each is part of the engine-cache key. The CLI maps `streamrt build --no-fusion ...`
// (and, for compatibility, the STREAMRT_NO_*_FUSION / STREAMRT_NO_VIEW_ALIASING /
// STREAMRT_CONV_TACTICS / STREAMRT_NO_STEP_TIMING variables) onto these fields; the library
// itself reads no environment.
struct BuilderPasses {
  // Fusions (builder/fusion.h): Conv + Add / Relu epilogues, MatMul + bias Add, MatMul + a
  // residual Add of the output's shape (the GEMM adds it as its C operand), the rotary embedding
  // pattern, MatMul-Softmax-MatMul attention.
  bool conv_fusion = true;
  bool matmul_bias_fusion = true;
  bool matmul_residual_fusion = true;
  // MatMuls by constant weights that read one activation (Q / K / V, gate / up) -> one step, with
  // the RMS normalization before them and the SwiGLU gate after (builder/fuse_matmul_group.cc).
  // Not applied in weight-streaming builds.
  bool matmul_group_fusion = true;
  bool rotary_fusion = true;
  bool attention_fusion = true;
  // A view step (Reshape, Squeeze, ...) whose input and output are same-sized activations shares
  // its input's memory instead of copying (builder/lowering.cc).
  bool view_aliasing = true;
  // CUDA (with `tactics`): also time cuDNN's algorithms for each Conv step and record the
  // fastest. Off by default: the timed choices made ResNet-50 slower end to end on an H200
  // (src/backends/cuda/dnn/conv_tactics.cu says why).
  bool conv_tactics = false;
  // CUDA weight-streaming builds time each step on the device for the residency planner
  // (builder/step_timing.h); off: the planner uses its estimates.
  bool step_timing = true;
  bool operator==(const BuilderPasses&) const = default;
};
// Weight-only quantization (BuilderConfig::weight_quant): MatMul / Gemm weights (constant B
// operands) stored, streamed and read compressed; activations and accumulation keep the build's
// float type. int8: one symmetric scale per output channel. fp8: float8 e4m3 codes with one scale
// per output channel (amax / 448), read through a conversion on any GPU. int4: groups of `group` elements
// along the reduction (K) with a scale and a zero point each (uint4, two per byte; a K that is
// no multiple of the group pads its last group). docs/weight-streaming.md says more.
enum class WeightQuantScheme : uint8_t { kNone = 0, kInt8 = 1, kInt4 = 2, kFp8 = 3 };
struct WeightQuant {
  WeightQuantScheme scheme = WeightQuantScheme::kNone;
  int group = 128;  // int4: 32, 64 or 128; ignored for int8
  // Calibration inputs (one map of input name -> host tensor per run; shapes within the build's
  // profiles). Empty: each weight is rounded to its nearest codes. Given: the builder runs the
  // model on the CPU over them, gathers X^T X of each quantized MatMul's input X, and quantizes
  // with GPTQ (columns in turn, each one's rounding error compensated in the columns not yet
  // quantized, weighted by those statistics), so the products on inputs like these stay closer to
  // the float ones. Refit cannot recalibrate: it rounds (docs/weight-streaming.md).
  std::vector<std::map<std::string, Tensor>> calibration;
};
// "none", "int8", "fp8", "int4" or "int4:GROUP" (group 32, 64 or 128; int4 alone is int4:128).
Result<WeightQuant> parse_weight_quant(const std::string& spec);
std::string weight_quant_name(const WeightQuant& q);

// There is no CPU SIMD switch here: the CPU's vector kernels (ops/half_gemm.cc) are chosen at run
// time on the machine that runs the plan, and a plan is the same with or without them.

// How far a long build phase has come, for a progress bar (the CLI draws one on a terminal).
// Phases: "weights to fp16" / "weights to bf16" (precision conversion), "tactics" (timing GEMM
// algorithms on the device), "step timing" (timed runs of the whole plan). A phase reports
// done = 0 first and done = total last.
struct BuildProgress {
  std::string_view phase;
  uint64_t done = 0, total = 0;
};

struct BuilderConfig {
  DeviceType device = DeviceType::kCpu;
  // Fixed shapes for inputs (overrides dynamic dims), e.g. {"input": {1, 3, 224, 224}}.
  std::map<std::string, Dims> shapes;
  // Optimization profile for inputs with dynamic dims.
  std::map<std::string, ShapeProfile> profiles;
  // Precision of float layers: float32 keeps the model's types (strongly typed); float16 or
  // bfloat16 run float32 layers in half precision (inputs and outputs keep their types).
  DataType float_precision = DataType::kFloat32;
  // Mark large weights of weight-heavy ops (MatMul, Gemm, Conv, Gather embeddings) streamable, so
  // the engine can run with only part of its weights in device memory. Needs a strongly typed
  // network (float_precision float32: the model's own types); kInvalidArgument otherwise.
  bool weight_streaming = false;
  // Weights smaller than this stay resident even with weight_streaming (a copy per run would
  // cost more than the memory it frees). Tests lower it to stream small fixtures.
  uint64_t min_streamable_bytes = 64 * 1024;
  // With weight_streaming: a weight larger than this is split into chunks of about this size,
  // each read by its own step (a GEMM by blocks of output columns, a Conv by blocks of output
  // channels; ops/weight_split.h), so the streaming scratch is a few chunks, not a few of the
  // largest weight. 0 keeps weights whole. Gather tables are never split: they are read in place.
  uint64_t stream_chunk_bytes = 64ull << 20;
  // CUDA: time the cuBLASLt algorithms of each MatMul / Gemm at the profile's opt shapes and
  // record the fastest in the plan (off: faster builds; cuBLASLt's heuristic decides at run time).
  bool tactics = true;
  // CUDA: float32 MatMul / Gemm / Conv may use TF32 tensor cores (10-bit mantissa: results differ
  // from strict float32 by about 1e-3 relative). Off by default, like a strongly typed network.
  bool allow_tf32 = false;
  // Store MatMul / Gemm weights quantized (see WeightQuant); none keeps them in float.
  WeightQuant weight_quant;
  // KV-cache decoders (transformers / optimum layout: a graph input `past` concatenated with the
  // new keys or values along the sequence axis into a graph output `present` that only fused
  // Attention steps read): store each such pair with room for the profile's longest present
  // (TensorDesc::seq_capacity) and append the new positions in place instead of copying the cache
  // into the present every step. A caller binds one buffer of that capacity to both past and
  // present (the engine then writes only the new rows) or two (it copies the past first). Pairs
  // that anything else reads stay dense; BuildReport::kv_pairs_in_place counts the others. The
  // step timing of a weight-streaming build then times its whole run at the profile's opt shapes
  // (the decode step) instead of the min. docs/weight-streaming.md, "In-place KV cache".
  bool kv_cache_in_place = false;
  // Name recorded in the plan (defaults to the ONNX graph name).
  std::string engine_name;
  // Write the plan without its weights (TensorRT's kSTRIP_PLAN): a small plan that must be
  // refitted from the model (streamrt/refit.h) before it runs.
  bool strip_weights = false;
  // Bounds on the work a model may ask of the builder, so that a broken or hostile model gets a
  // clear error instead of exhausting memory. A graph of more nodes than max_nodes (as imported)
  // is kInvalidArgument; a tensor whose static dims (graph inputs at the given shapes or the
  // profile's max, every inferred intermediate) hold more than max_tensor_elements elements, or
  // so many that the count overflows, is kInvalidModel naming the tensor and its node. The
  // defaults are far above real models: a 100 000-node chain builds in seconds, and 2^36
  // elements are 256 GiB of float32. Not in the engine-cache key: a plan that builds does not
  // depend on them.
  uint64_t max_nodes = 1'000'000;
  int64_t max_tensor_elements = int64_t{1} << 36;
  // Passes and measurements switched off (or on) for diagnosis; the defaults are what streamrt
  // recommends.
  BuilderPasses passes;
  // Called from the building thread as long phases advance (keep it cheap); empty: no reports.
  // Not in the engine-cache key: it does not change the plan.
  std::function<void(const BuildProgress&)> progress;
  // Adding a field? Add it to the engine-cache key too: src/cache/key.cc, append_builder_config().
};

// What the builder did, for logs and the CLI.
struct BuildReport {
  size_t nodes_imported = 0;
  size_t nodes_folded = 0;      // replaced by constants
  size_t nodes_removed = 0;     // dead or identity
  size_t nodes_fused = 0;       // absorbed into fused ops (RMSNormalization, ...)
  size_t steps = 0;             // in the final plan
  uint64_t arena_bytes = 0;     // activation memory (planned for max shapes)
  uint64_t naive_arena_bytes = 0;  // what the activations would need without sharing
  uint64_t weight_bytes = 0;
  uint64_t streamable_bytes = 0;   // with weight_streaming
  size_t streamable_weights = 0;
  size_t steps_split = 0;          // steps split into chunk steps (stream_chunk_bytes)
  size_t steps_quantized = 0;      // MatMul / Gemm steps reading compressed weights (weight_quant)
  size_t steps_calibrated = 0;     // of those, quantized with calibration statistics (GPTQ)
  double calibration_ms = 0;       // time spent running the calibration inputs and in GPTQ
  size_t steps_prequantized = 0;   // steps reading weights the model stored quantized (DequantizeLinear, MatMulNBits)
  size_t steps_tuned = 0;          // steps whose tactic was timed and recorded
  size_t steps_tuned_reused = 0;   // of those, steps that took the records of an identical step timed before
  size_t kv_pairs_in_place = 0;    // past / present pairs stored with capacity (kv_cache_in_place)
  int64_t kv_capacity = 0;         // their capacity (positions; the largest when they differ)
  double tactic_ms = 0;            // time spent timing tactics
  // Weight streaming on CUDA: the plan's steps timed on the device at the profile's max shapes
  // (plan step_ms), for the residency planner: their total and the time timing took, or
  // `step_timing_note` saying why not (empty when not attempted); and one run at the min shapes
  // (plan min_run_ms; 0 when not measured), replayed as a CUDA graph (`min_run_graph`) or eager.
  bool steps_timed = false;
  double step_ms_total = 0, step_timing_ms = 0;
  double min_run_ms = 0;
  bool min_run_graph = false;
  std::string step_timing_note;
};

// Imports `onnx_path`, optimizes and serializes the engine. Errors name the input / node.
Result<std::vector<uint8_t>> build_plan_from_onnx(const std::string& onnx_path,
                                                  const BuilderConfig& config,
                                                  BuildReport* report = nullptr);
// Same, writing the plan to `plan_path` atomically.
Status build_plan_file(const std::string& onnx_path, const BuilderConfig& config,
                       const std::string& plan_path, BuildReport* report = nullptr);

}  // namespace streamrt
