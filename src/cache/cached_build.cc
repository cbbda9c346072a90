// Cached builds: key the optimized graph, serve a hit by refitting the model's weights into the
// cached stripped plan, or build, store a stripped copy and return the plan.
#include "cache/cached_build.h"

#include <filesystem>
#include <optional>

#include "builder/build_steps.h"
#include "builder/tactics.h"
#include "cache/entry.h"
#include "cache/key.h"
#include "core/logging.h"
#include "onnx/importer.h"
#include "runtime/refit_core.h"

namespace streamrt::cache {
namespace {

void discard(EngineCache& cache, const CacheKey& key, const Status& why, CachedBuildInfo& info) {
  Status removed = cache.remove(key);
  log_warning("engine cache: entry " + key.hex() + " is unusable (" + why.message() + "); " +
              (removed.ok() ? "removed it" : "removing it failed: " + removed.message()) + "; rebuilding");
  info.corrupt_entry_removed = true;
}

// The cached plan for `prep`, refitted with its weights (left stripped when config.strip_weights),
// or nothing on a miss. An entry that fails any check is removed.
std::optional<plan::PlanData> try_hit(EngineCache& cache, const CacheKey& key, const builder::PreparedGraph& prep,
                                      const BuilderConfig& config, const std::string& source, CachedBuildInfo& info) {
  auto entry = cache.load(key);
  if (!entry.ok()) {
    if (entry.status().code() != StatusCode::kNotFound) discard(cache, key, entry.status(), info);
    return std::nullopt;
  }
  Status st = verify_entry(*entry, key);
  std::optional<plan::PlanData> plan;
  if (st.ok()) {
    auto bytes = std::make_shared<std::vector<uint8_t>>(std::move(entry->plan));
    auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), bytes);
    if (loaded.ok()) plan = std::move(loaded->data);
    else st = loaded.status();
  }
  if (st.ok() && !plan->weights_stripped) st = invalid_plan("the cached plan holds weights");
  if (st.ok() && plan->device.kind != prep.device.kind) st = invalid_plan("the cached plan is for another device");
  if (st.ok()) st = refit::check_structure(*plan, prep.graph, source);
  std::map<int32_t, Tensor> staged;
  if (st.ok() && !config.strip_weights) {
    auto weights = refit::weights_from_graph(*plan, prep.graph, source);
    if (weights.ok())
      for (size_t i = 0; i < weights->size(); ++i) staged[static_cast<int32_t>(i)] = std::move((*weights)[i]);
    else st = weights.status();
  }
  if (st.ok() && !staged.empty()) st = refit::apply_weights(*plan, nullptr, staged, nullptr);
  if (!st.ok()) {
    discard(cache, key, st, info);
    return std::nullopt;
  }
  if (!config.strip_weights) plan->weights_stripped = false;  // a plan without weights at all
  return plan;
}

// What the lowering would have reported, read back from a cached plan.
void report_plan(const plan::PlanData& p, BuildReport* report) {
  if (!report) return;
  report->steps = p.steps.size();
  report->arena_bytes = p.arena_size;
  for (const plan::ValueEntry& v : p.values)
    if (v.kind == plan::ValueEntry::Kind::kActivation) report->naive_arena_bytes += v.arena_size;
  for (const ir::Node& s : p.steps)  // timed back then
    report->steps_tuned += s.attrs.count(builder::kLtAlgoAttr) + s.attrs.count(builder::kConvAlgoAttr);
  for (const plan::WeightEntry& w : p.weights) {
    report->weight_bytes += w.size;
    if (w.streamable) {
      report->streamable_bytes += w.size;
      ++report->streamable_weights;
    }
  }
}

std::string model_id_of(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

Result<plan::PlanData> build_from_path(const std::string& onnx_path, const BuilderConfig& config, EngineCache& cache,
                                       CachedBuildInfo* info, BuildReport* report) {
  SRT_ASSIGN_OR_RETURN(ir::Graph g, onnx_import::import_onnx_file(onnx_path));
  return build_plan_data_cached(std::move(g), onnx_path, model_id_of(onnx_path), config, cache, info, report);
}

}  // namespace

Result<plan::PlanData> build_plan_data_cached(ir::Graph imported, const std::string& source, const std::string& model_id,
                                              const BuilderConfig& config, EngineCache& cache, CachedBuildInfo* info,
                                              BuildReport* report, const CachedBuildHooks& hooks) {
  CachedBuildInfo local;
  CachedBuildInfo& inf = info ? *info : local;
  inf = CachedBuildInfo{};
  CacheKeyInfo model_parts;
  add_model_parts(model_parts, imported);
  SRT_ASSIGN_OR_RETURN(builder::PreparedGraph prep,
                       builder::prepare_graph(std::move(imported), source, config, report));
  CacheKeyInfo key = compute_key(prep.graph, config, KeyContext{.device = prep.device});
  key.components.insert(model_parts.components.begin(), model_parts.components.end());
  inf.key = key.key;
  const std::optional<CacheKeyInfo> last = cache.last_key(model_id);
  auto hit = [&](plan::PlanData plan) -> plan::PlanData {
    inf.hit = true;
    if (!last || last->components != key.components) cache.record_key(model_id, key);  // (a write + fsync)
    report_plan(plan, report);
    return plan;
  };
  if (auto plan = try_hit(cache, key.key, prep, config, source, inf)) return hit(std::move(*plan));

  // Miss: build under the key's lock, unless another builder stored it while we waited.
  auto lock = cache.lock(key.key);
  if (!lock.ok()) log_warning("engine cache: cannot lock " + key.key.hex() + " (" + lock.status().message() + ")");
  if (auto plan = try_hit(cache, key.key, prep, config, source, inf)) return hit(std::move(*plan));
  inf.miss_reason = inf.corrupt_entry_removed ? "the cached entry was unusable and was removed" : explain_miss(last, key);

  BuilderConfig full = config;
  full.strip_weights = false;
  SRT_ASSIGN_OR_RETURN(plan::PlanData plan, builder::finish_plan(prep, full, report));
  if (hooks.after_build) hooks.after_build();
  plan.weights_stripped = true;
  auto stripped = plan::serialize_plan(plan);
  plan.weights_stripped = false;
  Status saved = stripped.ok() ? cache.save(key.key, make_entry(std::move(stripped).value(), key.key, plan))
                               : stripped.status();
  if (saved.ok()) {
    inf.saved = cache.contains(key.key);  // a store may decline (an entry larger than the cache)
    if (!inf.saved) inf.save_error = "the cache did not keep the entry";
  } else {
    inf.save_error = saved.message();
    log_warning("engine cache: could not store " + key.key.hex() + ": " + saved.message() + " (the build succeeded)");
  }
  cache.record_key(model_id, key);
  if (config.strip_weights) {
    plan.weights_stripped = true;
    plan.weight_data.clear();
  }
  return plan;
}

}  // namespace streamrt::cache

namespace streamrt {

Result<CacheKeyInfo> compute_cache_key(const std::string& onnx_path, const BuilderConfig& config) {
  SRT_ASSIGN_OR_RETURN(ir::Graph g, onnx_import::import_onnx_file(onnx_path));
  SRT_ASSIGN_OR_RETURN(builder::PreparedGraph prep, builder::prepare_graph(std::move(g), onnx_path, config, nullptr));
  return cache::compute_key(prep.graph, config, cache::KeyContext{.device = prep.device});
}

Result<std::vector<uint8_t>> build_plan_cached(const std::string& onnx_path, const BuilderConfig& config,
                                               EngineCache& cache, CachedBuildInfo* info, BuildReport* report) {
  SRT_ASSIGN_OR_RETURN(plan::PlanData plan, cache::build_from_path(onnx_path, config, cache, info, report));
  return plan::serialize_plan(plan);
}

Status build_plan_file_cached(const std::string& onnx_path, const BuilderConfig& config, EngineCache& cache,
                              const std::string& plan_path, CachedBuildInfo* info, BuildReport* report) {
  SRT_ASSIGN_OR_RETURN(plan::PlanData plan, cache::build_from_path(onnx_path, config, cache, info, report));
  return plan::write_plan(plan, plan_path);
}

}  // namespace streamrt
