// Cached builds from an imported graph, for callers that import (or partition) models
// themselves: `streamrt compile` builds each delegated subgraph through this.
#pragma once

#include <functional>
#include <string>

#include "ir/graph.h"
#include "plan/plan.h"
#include "streamrt/cache.h"

namespace streamrt::cache {

struct CachedBuildHooks {
  // Tests: runs after a miss's build, before its entry is saved (while the key's lock is held).
  std::function<void()> after_build;
};

// Optimizes `imported` for `config`, then serves the plan from `cache` (refitting the graph's
// weights into the cached stripped plan) or builds it and stores a stripped copy. `source` names
// the model in messages (and the engine when nothing else does); `model_id` identifies it across
// builds for miss explanations (an absolute path, or e.g. "program.onnx#subgraph3").
Result<plan::PlanData> build_plan_data_cached(ir::Graph imported, const std::string& source, const std::string& model_id,
                                              const BuilderConfig& config, EngineCache& cache, CachedBuildInfo* info,
                                              BuildReport* report, const CachedBuildHooks& hooks = {});

}  // namespace streamrt::cache
