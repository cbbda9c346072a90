// Subgraph extraction and engine records for partitions (see preprocess.h).
#include "delegate/preprocess.h"

#include <unordered_map>
#include <unordered_set>

#include "builder/build_graph.h"
#include "cache/cached_build.h"
#include "delegate/engine_record.h"
#include "plan/plan.h"
#include "runtime/device_backend.h"

namespace streamrt::delegate {

Subgraph extract_subgraph(const ir::Graph& g, std::span<const size_t> nodes, const std::string& name) {
  Subgraph s;
  s.graph.name = name;
  std::unordered_set<size_t> inside(nodes.begin(), nodes.end());
  std::unordered_set<ir::ValueId> produced, read_outside(g.outputs.begin(), g.outputs.end());
  for (size_t n : nodes)
    for (ir::ValueId o : g.nodes[n].outputs)
      if (o != ir::kNoValue) produced.insert(o);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (!inside.count(n))
      for (ir::ValueId i : g.nodes[n].inputs) read_outside.insert(i);
  std::unordered_map<ir::ValueId, ir::ValueId> id;  // g -> sub
  auto map = [&](ir::ValueId v) {
    if (v == ir::kNoValue) return ir::kNoValue;
    auto [it, added] = id.emplace(v, ir::kNoValue);
    if (added) {
      const ir::Value& src = g.value(v);
      it->second = s.graph.add_value(src.name, src.dtype, src.dims, src.has_shape);
      if (const Tensor* c = g.constant(v)) {
        s.graph.constants[it->second] = *c;
      } else if (!produced.count(v)) {
        s.graph.inputs.push_back(it->second);
        s.inputs.push_back(v);
      }
    }
    return it->second;
  };
  for (size_t n : nodes) {
    ir::Node node = g.nodes[n];
    for (ir::ValueId& i : node.inputs) i = map(i);
    for (ir::ValueId& o : node.outputs) {
      const ir::ValueId src = o;
      o = map(o);
      if (src != ir::kNoValue && read_outside.count(src)) {
        s.graph.outputs.push_back(o);
        s.outputs.push_back(src);
      }
    }
    s.graph.nodes.push_back(std::move(node));
  }
  return s;
}

namespace {

// The partition's plan: built directly, or through the cache. Both name the subgraph the same
// way in messages, so an error reads alike with and without a cache.
Result<std::vector<uint8_t>> build_plan(ir::Graph sub, const BuilderConfig& config, const PreprocessCache* cache,
                                        PreprocessResult& out) {
  if (!cache) return builder::build_plan_from_graph(std::move(sub), config, &out.report);
  const std::string source = "graph '" + (config.engine_name.empty() ? sub.name : config.engine_name) + "'";
  CachedBuildInfo info;
  SRT_ASSIGN_OR_RETURN(plan::PlanData plan, cache::build_plan_data_cached(std::move(sub), source, cache->model_id,
                                                                          config, cache->cache, &info, &out.report));
  out.cache = std::move(info);
  return plan::serialize_plan(plan);
}

}  // namespace

Result<PreprocessResult> preprocess(ir::Graph sub, const BuilderConfig& config, const PreprocessCache* cache) {
  PreprocessResult out;
  EngineRecord rec;
  rec.engine_name = config.engine_name.empty() ? sub.name : config.engine_name;
  rec.streamrt_version = STREAMRT_VERSION;
  for (ir::ValueId v : sub.inputs) rec.inputs.push_back(sub.value(v).name);
  for (ir::ValueId v : sub.outputs) rec.outputs.push_back(sub.value(v).name);
  SRT_ASSIGN_OR_RETURN(std::vector<uint8_t> plan, build_plan(std::move(sub), config, cache, out));
  if (DeviceBackend* b = find_device_backend(config.device)) rec.device = b->info();
  rec.streamable_size = out.report.streamable_bytes;
  out.streamable_size = rec.streamable_size;
  out.record = serialize_engine_record(rec, plan);
  return out;
}

}  // namespace streamrt::delegate
