#include "streamrt/builder.h"

#include <unordered_map>

#include "builder/build_graph.h"
#include "builder/build_steps.h"
#include "builder/streamable.h"
#include "builder/lowering.h"
#include "builder/fusion.h"
#include "builder/import_quantized.h"
#include "builder/kv_cache.h"
#include "builder/passes.h"
#include "builder/precision.h"
#include "builder/quantize_weights.h"
#include "builder/step_timing.h"
#include "builder/tactics.h"
#include "core/guard.h"
#include "core/logging.h"
#include "ir/shape_inference.h"
#include "onnx/importer.h"
#include "plan/plan.h"
#include "runtime/device_backend.h"

namespace streamrt {

namespace {

constexpr int64_t kSequenceInputOptBytes = 4096;

// Applies fixed shapes and profiles to the graph inputs and returns the max dims per input.
Result<std::unordered_map<ir::ValueId, builder::InputProfile>> apply_shapes(
    ir::Graph& g, const BuilderConfig& config) {
  std::unordered_map<std::string, ir::ValueId> inputs;
  for (ir::ValueId id : g.inputs) inputs[g.value(id).name] = id;
  for (const auto& [name, dims] : config.shapes)
    if (!inputs.count(name)) return invalid_argument("--shapes names '" + name + "', which is not a model input");
  for (const auto& [name, p] : config.profiles)
    if (!inputs.count(name)) return invalid_argument("--profile names '" + name + "', which is not a model input");

  std::unordered_map<ir::ValueId, builder::InputProfile> out;
  for (ir::ValueId id : g.inputs) {
    ir::Value& v = g.value(id);
    builder::InputProfile prof;
    auto check_rank = [&](const Dims& d, const char* what) -> Status {
      if (d.size() != v.dims.size())
        return invalid_argument(std::string(what) + " for input '" + v.name + "' has rank " +
                                std::to_string(d.size()) + ", the model's input has rank " +
                                std::to_string(v.dims.size()) + " (" + dims_to_string(v.dims) + ")");
      for (size_t i = 0; i < d.size(); ++i)
        if (d[i] < 0 || (v.dims[i] >= 0 && d[i] != v.dims[i]))
          return invalid_argument(std::string(what) + " " + dims_to_string(d) + " for input '" + v.name +
                                  "' does not match the model's dims " + dims_to_string(v.dims));
      return ok_status();
    };
    if (auto it = config.shapes.find(v.name); it != config.shapes.end()) {
      SRT_RETURN_IF_ERROR(check_rank(it->second, "shape"));
      prof.min = prof.opt = prof.max = it->second;
      v.dims = it->second;
    } else if (auto pit = config.profiles.find(v.name); pit != config.profiles.end()) {
      const ShapeProfile& p = pit->second;
      SRT_RETURN_IF_ERROR(check_rank(p.min, "profile min"));
      SRT_RETURN_IF_ERROR(check_rank(p.opt, "profile opt"));
      SRT_RETURN_IF_ERROR(check_rank(p.max, "profile max"));
      for (size_t i = 0; i < p.min.size(); ++i)
        if (!(p.min[i] <= p.opt[i] && p.opt[i] <= p.max[i]))
          return invalid_argument("profile for input '" + v.name + "' needs min <= opt <= max in every dim, got " +
                                  dims_to_string(p.min) + " / " + dims_to_string(p.opt) + " / " +
                                  dims_to_string(p.max));
      prof.min = p.min;
      prof.opt = p.opt;
      prof.max = p.max;
      // Dims that the profile fixes become static; the rest stay dynamic.
      for (size_t i = 0; i < v.dims.size(); ++i)
        v.dims[i] = p.min[i] == p.max[i] ? p.min[i] : kDynamicDim;
    } else if (!v.seq.is_tensor()) {
      // A sequence / optional input: its encoding's bytes, any length up to the element bound
      // (ExecutionContext::set_sequence_input sets it). Its consumers run on the host and size
      // what they make at run time, so the bound reserves no memory.
      prof.min = {0};
      prof.opt = {kSequenceInputOptBytes};
      prof.max = {std::max<int64_t>(config.max_tensor_elements, kSequenceInputOptBytes)};
      v.dims = {kDynamicDim};
    } else {
      if (!dims_static(v.dims))
        return invalid_argument("input '" + v.name + "' has dynamic dims " + dims_to_string(v.dims) +
                                "; give its shape (--shapes " + v.name + ":...) or a profile (--profile " +
                                v.name + ":MIN:OPT:MAX)");
      prof.min = prof.opt = prof.max = v.dims;
    }
    out[id] = prof;
  }
  return out;
}

}  // namespace

namespace builder {

Result<PreparedGraph> prepare_graph(ir::Graph g, const std::string& source, const BuilderConfig& config,
                                    BuildReport* report) {
  BuildReport local;
  BuildReport& rep = report ? *report : local;
  DeviceBackend* backend = find_device_backend(config.device);
  if (!backend)
    return unsupported(std::string("this build of streamrt has no ") + device_type_name(config.device) + " backend");
  if (Status st = backend->available(); !st.ok())
    return st.with_context(std::string("building for ") + device_type_name(config.device));
  if (config.weight_streaming && config.float_precision != DataType::kFloat32)
    return invalid_argument(std::string("weight streaming needs a strongly typed network, but --") +
                            (config.float_precision == DataType::kFloat16 ? "fp16" : "bf16") +
                            " lets the builder change layer types; build without it (export the model in the "
                            "precision it should run in)");
  if (g.nodes.size() > config.max_nodes)
    return invalid_argument(source + ": the graph has " + std::to_string(g.nodes.size()) + " nodes, more than the " +
                            std::to_string(config.max_nodes) + " the builder takes (BuilderConfig::max_nodes)");
  PreparedGraph out;
  out.device = backend->info();
  rep.nodes_imported = g.nodes.size();
  SRT_ASSIGN_OR_RETURN(out.profiles, apply_shapes(g, config));
  ir::InferOptions infer;
  infer.max_tensor_elements = config.max_tensor_elements;
  testing::throw_point("shapes");
  auto st = ir::infer_shapes(g, infer);
  if (!st.ok()) return st.status().with_context(source);
  testing::throw_point("passes");
  // Before folding, which would dequantize them: the model's quantized weights stay compressed.
  auto prequantized = builder::import_quantized_weights(g);
  if (!prequantized.ok()) return prequantized.status().with_context(source);
  rep.steps_prequantized = *prequantized;
  if (rep.steps_prequantized > 0) builder::remove_dead_code(g);  // the dequantizations they replace
  SRT_ASSIGN_OR_RETURN(rep.nodes_folded, builder::fold_constants(g));
  SRT_RETURN_IF_ERROR(builder::inline_constant_ifs(g).status());
  SRT_ASSIGN_OR_RETURN(size_t sequence_reads, builder::fold_sequences(g));
  if (sequence_reads > 0) {  // the rewritten readers' shapes, and what they make constant
    auto refolded = builder::fold_constants(g);
    if (!refolded.ok()) return refolded.status().with_context(source + " after folding sequences");
    rep.nodes_folded += *refolded;
  }
  rep.nodes_removed = builder::remove_identities(g);
  rep.nodes_removed += builder::remove_dead_code(g);
  // Exporters' plumbing that would hide a pattern from fusion: Casts to a value's own type, unit
  // scalings, Reshape targets computed from shapes (and their Shape readers of fused tensors).
  const size_t before_simplify = g.nodes.size();
  builder::fold_casts(g);
  builder::drop_unit_scalings(g);
  builder::fold_reshape_targets(g);
  rep.nodes_removed += before_simplify - g.nodes.size();
  rep.nodes_fused = builder::run_fusions(g, config.passes);
  // Reduced precision comes first so that weights are quantized from the values the plan would
  // hold (as refit quantizes them); it never meets the split below (weight streaming needs float32).
  if (config.float_precision != DataType::kFloat32) {
    SRT_RETURN_IF_ERROR(builder::convert_precision(g, config.float_precision, config));
    auto again = ir::infer_shapes(g, infer);
    if (!again.ok()) return again.status().with_context(std::string("in ") + dtype_name(config.float_precision));
  }
  // What fusion leaves of exporters' plumbing: Cast and Transpose pairs, Reshape targets computed
  // from shapes, and the layers' recomputations of one thing (masks, rotary tables, shapes).
  const size_t before_cleanup = g.nodes.size();
  builder::fold_casts(g);
  builder::fold_transposes(g);
  builder::fold_reshape_targets(g);
  builder::transposes_to_views(g);
  builder::merge_reshapes(g);
  builder::eliminate_common_subexpressions(g);
  rep.nodes_removed += before_cleanup - g.nodes.size();
  SRT_ASSIGN_OR_RETURN(size_t slices_moved, builder::slices_before_norms(g));
  if (slices_moved > 0) {
    auto again = ir::infer_shapes(g, infer);
    if (!again.ok()) return again.status().with_context("after moving Slices ahead of normalizations");
  }
  rep.nodes_removed += builder::drop_whole_slices(g);
  SRT_RETURN_IF_ERROR(builder::quantize_weights(g, config, out.profiles, rep));
  if (rep.steps_quantized > 0) {
    builder::remove_dead_code(g);  // the float weights the compressed ones replace
    auto again = ir::infer_shapes(g, infer);
    if (!again.ok()) return again.status().with_context("after quantizing weights");
  }
  if (config.weight_streaming && config.stream_chunk_bytes > 0) {
    SRT_ASSIGN_OR_RETURN(rep.steps_split, builder::split_large_weights(g, config.stream_chunk_bytes));
    if (rep.steps_split > 0) {
      builder::remove_dead_code(g);  // the whole weights the chunks replace
      auto again = ir::infer_shapes(g, infer);
      if (!again.ok()) return again.status().with_context("after splitting large weights");
    }
  }
  if (config.passes.matmul_residual_fusion) rep.nodes_fused += builder::fuse_matmul_residual(g);
  if (config.kv_cache_in_place) {
    SRT_ASSIGN_OR_RETURN(KvCacheInPlace kv, store_kv_caches_in_place(g, out.profiles, config.max_tensor_elements));
    rep.kv_pairs_in_place = kv.pairs;
    rep.kv_capacity = kv.capacity;
    if (kv.pairs == 0)
      log_warning(source + ": kv_cache_in_place found no past / present pair it can store in place (a graph "
                  "input concatenated into a graph output that only attention reads); the cache stays dense");
  }
  // Last: the MatMuls every other pass leaves (quantized and split steps are no longer MatMuls).
  if (config.passes.matmul_group_fusion && !config.weight_streaming) {
    const size_t fused = builder::fuse_matmul_groups(g);
    rep.nodes_fused += fused;
    if (fused > 0) {
      auto again = ir::infer_shapes(g, infer);
      if (!again.ok()) return again.status().with_context("after grouping MatMuls");
    }
  }
  if (config.passes.rotary_fusion && builder::pair_rotaries(g) > 0) {
    auto again = ir::infer_shapes(g, infer);
    if (!again.ok()) return again.status().with_context("after pairing Rotary steps");
  }
  if (config.passes.rotary_fusion && config.passes.matmul_group_fusion && !config.weight_streaming) {
    const size_t folded = builder::fold_group_rotaries(g);
    rep.nodes_fused += folded;
    if (folded > 0) {
      auto again = ir::infer_shapes(g, infer);
      if (!again.ok()) return again.status().with_context("after folding Rotary steps into MatMul groups");
    }
  }
  if (config.engine_name.empty() && g.name.empty()) {
    size_t slash = source.find_last_of('/');
    g.name = source.substr(slash == std::string::npos ? 0 : slash + 1);
  }
  // From here on the graph's constants are the plan's weights, name for name.
  SRT_RETURN_IF_ERROR(builder::materialize_outputs(g));
  out.graph = std::move(g);
  return out;
}

Result<plan::PlanData> finish_plan(PreparedGraph& prepared, const BuilderConfig& config, BuildReport* report) {
  testing::throw_point("lowering");
  SRT_ASSIGN_OR_RETURN(plan::PlanData plan, builder::lower_to_plan(prepared.graph, prepared.profiles, config, report));
  plan.device = prepared.device;
  SRT_RETURN_IF_ERROR(builder::choose_tactics(plan, config, report));
  if (config.weight_streaming) {
    BuildReport local;
    BuildReport& rep = report ? *report : local;
    builder::mark_streamable_weights(plan, config.min_streamable_bytes, &rep);
    // Measured step times steer the residency planner; they need the weights (not a stripped build).
    if (!config.strip_weights) builder::time_plan_steps(plan, config, rep);
  }
  if (config.strip_weights) {
    plan.weights_stripped = true;
    plan.weight_data.clear();
  }
  return plan;
}

Result<std::unordered_map<ir::ValueId, InputProfile>> apply_input_shapes(ir::Graph& g, const BuilderConfig& config) {
  return apply_shapes(g, config);
}

Result<std::vector<uint8_t>> build_plan_from_graph(ir::Graph g, const BuilderConfig& config, BuildReport* report) {
  const std::string source = "graph '" + (config.engine_name.empty() ? g.name : config.engine_name) + "'";
  SRT_ASSIGN_OR_RETURN(PreparedGraph prepared, prepare_graph(std::move(g), source, config, report));
  SRT_ASSIGN_OR_RETURN(plan::PlanData plan, finish_plan(prepared, config, report));
  return plan::serialize_plan(plan);
}

}  // namespace builder

namespace {

Result<plan::PlanData> build_plan_data(const std::string& onnx_path, const BuilderConfig& config,
                                       BuildReport* report) {
  testing::throw_point("import");
  SRT_ASSIGN_OR_RETURN(ir::Graph g, onnx_import::import_onnx_file(onnx_path));
  SRT_ASSIGN_OR_RETURN(builder::PreparedGraph prepared, builder::prepare_graph(std::move(g), onnx_path, config, report));
  return builder::finish_plan(prepared, config, report);
}

}  // namespace

Result<std::vector<uint8_t>> build_plan_from_onnx(const std::string& onnx_path,
                                                  const BuilderConfig& config,
                                                  BuildReport* report) {
  const auto where = [&] { return "building a plan from '" + onnx_path + "'"; };
  return guard(where, [&]() -> Result<std::vector<uint8_t>> {
    SRT_ASSIGN_OR_RETURN(plan::PlanData plan, build_plan_data(onnx_path, config, report));
    return plan::serialize_plan(plan);
  });
}

Status build_plan_file(const std::string& onnx_path, const BuilderConfig& config,
                       const std::string& plan_path, BuildReport* report) {
  return guard([&] { return "building plan '" + plan_path + "' from '" + onnx_path + "'"; }, [&]() -> Status {
    SRT_ASSIGN_OR_RETURN(plan::PlanData plan, build_plan_data(onnx_path, config, report));
    return plan::write_plan(plan, plan_path);
  });
}

}  // namespace streamrt
