// Engine-cache keys: a canonical description of what determines a plan, hashed with SHA-256.
//
// The key is computed from the OPTIMIZED graph (builder::prepare_graph's result), not the
// imported one. The plan is a function of that graph (lowering is deterministic), and every
// build decision that depends on weight VALUES is visible in it: an RMSNorm fusion happens only
// when the Pow exponent is 2 and bakes the epsilon into an attribute; folding NonZero of a
// constant gives a constant whose dims depend on values. Keyed before optimization, two models
// with such different values would share a key and the cached plan would be wrong for one of
// them. A change to the passes that changes the optimized graph changes the key by itself; a
// change to lowering or kernels does not, which is why the streamrt version is part of the key.
//
// Parts (each hashed on its own so a miss can say which changed):
//   graph.io       graph name; inputs and outputs: names, dtypes, dims
//   graph.nodes    every node in order: name, op, domain, opset, attributes (tensors in full),
//                  edges (values numbered by first use), and each value's name, dtype and dims
//   graph.weights  every constant a node reads: name, dtype, dims; the VALUE only for constants
//                  that are not float (indices, axes, shapes) or that a node reads as a shape
//                  (OpSchema::shape_inputs): those are structure, not refittable weights
//   config.<field> every BuilderConfig field (append_builder_config in key.cc)
//   device         target device kind, compute capability, name
//   format         cache key scheme, plan format version, streamrt version
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "plan/plan.h"
#include "streamrt/cache.h"

namespace streamrt::cache {

// Bumped when the key's layout changes, or when builds start recording something that plans built
// before lack, so that their entries miss and rebuild rather than serve the older plan.
// 2: weight-streaming plans record a min-shape run (PlanData::min_run_ms) for the residency planner.
inline constexpr uint32_t kCacheKeyVersion = 2;

struct KeyContext {
  plan::DeviceInfo device;
  uint32_t plan_format_version = plan::kPlanFormatVersion;
  std::string streamrt_version = STREAMRT_VERSION;
};

// The key of a prepared (optimized) graph built with `config` for `ctx.device`.
CacheKeyInfo compute_key(const ir::Graph& prepared, const BuilderConfig& config, const KeyContext& ctx);

// Adds the imported (unoptimized) model's parts as "model.io", "model.nodes", "model.weights":
// not part of the key, kept in the per-model record so that a miss tells a changed model from a
// builder option that changed the optimized graph.
void add_model_parts(CacheKeyInfo& info, const ir::Graph& imported);

// Why `now` missed, given the last key recorded for the same model ("first build of this
// model" when there is none; "entry was evicted or removed" when the key is the same).
std::string explain_miss(const std::optional<CacheKeyInfo>& last, const CacheKeyInfo& now);

}  // namespace streamrt::cache
