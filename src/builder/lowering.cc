#include "builder/lowering.h"

#include <string>
#include <unordered_set>

#include "builder/memory_planner.h"
#include "core/logging.h"
#include "ir/shape_inference.h"
#include "plan/capacity_layout.h"
#include "plan/view_steps.h"

namespace streamrt::builder {

using plan::ValueEntry;

namespace {

// Makes the output of each view step whose input and output are both arena activations of the
// same planned size share the input's bytes (BufferRequest::alias); the kernels skip the copy
// when input and output are one buffer. Graph inputs and outputs, weights and activations of
// data-dependent size (no arena slot) keep their copy. Returns the number of views.
// (BuilderPasses::view_aliasing off skips it: every view copies.)
size_t alias_views(const plan::PlanData& plan, const std::vector<int32_t>& req_value, std::vector<BufferRequest>& req) {
  std::vector<int32_t> req_of(plan.values.size(), -1);
  for (size_t i = 0; i < req_value.size(); ++i) req_of[req_value[i]] = static_cast<int32_t>(i);
  size_t views = 0;
  for (const ir::Node& step : plan.steps) {
    if (!plan::is_view_step(step) || step.inputs[0] < 0 || step.outputs[0] < 0) continue;
    const int32_t in = req_of[step.inputs[0]], out = req_of[step.outputs[0]];
    if (in < 0 || out <= in || req[in].size == 0 || req[out].size != req[in].size) continue;
    req[out].alias = in;
    ++views;
  }
  return views;
}

}  // namespace

Status materialize_outputs(ir::Graph& g) {
  std::unordered_set<ir::ValueId> produced, seen;
  for (const auto& n : g.nodes)
    for (ir::ValueId o : n.outputs) produced.insert(o);
  for (ir::ValueId& out : g.outputs) {
    bool dup = !seen.insert(out).second;
    if (produced.count(out) && !dup) continue;
    const ir::Value src = g.value(out);
    if (!g.is_constant(out) && !dup)
      return unsupported("graph output '" + src.name + "' is a graph input; streamrt needs outputs "
                         "computed by the graph");
    ir::ValueId copy = g.add_value(src.name + (dup ? "::dup" + std::to_string(g.values.size()) : "::const"),
                                   src.dtype, src.dims, true);
    ir::Node n;
    n.name = "output_copy_" + src.name;
    n.op_type = "Identity";
    n.opset = 13;
    if (g.is_constant(out) && !dup) {
      // The output keeps its name; the constant moves to a new value.
      g.constants[copy] = g.constants[out];
      g.constants.erase(out);
      n.inputs = {copy};
      n.outputs = {out};
    } else {
      n.inputs = {out};
      n.outputs = {copy};
      out = copy;
    }
    g.nodes.push_back(std::move(n));
  }
  return ok_status();
}

Result<plan::PlanData> lower_to_plan(ir::Graph& g,
                                     const std::unordered_map<ir::ValueId, InputProfile>& profiles,
                                     const BuilderConfig& config, BuildReport* report) {
  SRT_RETURN_IF_ERROR(materialize_outputs(g));
  ir::InferOptions max_opts;
  for (const auto& [id, p] : profiles) max_opts.input_dims[id] = p.max;
  max_opts.max_tensor_elements = config.max_tensor_elements;
  auto max_shapes = ir::infer_shapes_readonly(g, max_opts);
  if (!max_shapes.ok()) return max_shapes.status().with_context("inferring shapes at the profile's max");

  plan::PlanData plan;
  plan.name = config.engine_name.empty() ? g.name : config.engine_name;
  plan.streamrt_version = STREAMRT_VERSION;

  std::unordered_map<ir::ValueId, int32_t> index;  // graph value -> plan value
  std::vector<bool> max_known;                     // per plan value: max shape inferred
  std::unordered_set<ir::ValueId> graph_inputs(g.inputs.begin(), g.inputs.end());
  std::unordered_set<ir::ValueId> graph_outputs(g.outputs.begin(), g.outputs.end());
  auto add = [&](ir::ValueId id) -> int32_t {
    if (auto it = index.find(id); it != index.end()) return it->second;
    const ir::Value& v = g.value(id);
    ValueEntry e;
    e.name = v.name;
    e.dtype = v.dtype;
    e.dims = v.dims;
    e.seq = v.seq;
    e.max_dims = max_shapes->infos[id].dims;
    max_known.push_back(max_shapes->infos[id].has_shape);
    if (graph_inputs.count(id)) e.kind = ValueEntry::Kind::kInput;
    else if (graph_outputs.count(id)) e.kind = ValueEntry::Kind::kOutput;
    else if (g.is_constant(id)) e.kind = ValueEntry::Kind::kWeight;
    if (e.kind == ValueEntry::Kind::kWeight) {
      const Tensor& t = *g.constant(id);
      e.weight_index = static_cast<int32_t>(plan.weights.size());
      plan.weights.push_back({v.name, t.dtype(), t.dims(), 0, t.nbytes(), false});
      plan.weight_data.push_back(t);
      if (report) report->weight_bytes += t.nbytes();
    }
    int32_t idx = static_cast<int32_t>(plan.values.size());
    plan.values.push_back(std::move(e));
    index[id] = idx;
    return idx;
  };

  for (ir::ValueId id : g.inputs) add(id);
  for (const ir::Node& n : g.nodes) {
    ir::Node step = n;
    for (auto& in : step.inputs)
      if (in != ir::kNoValue) in = add(in);
    for (auto& out : step.outputs)
      if (out != ir::kNoValue) out = add(out);
    plan.steps.push_back(std::move(step));
  }
  for (ir::ValueId id : g.outputs) add(id);

  // Lifetimes and memory plan of activations.
  std::vector<BufferRequest> req;
  std::vector<int32_t> req_value;
  std::vector<int32_t> first(plan.values.size(), -1), last(plan.values.size(), -1);
  for (int32_t s = 0; s < static_cast<int32_t>(plan.steps.size()); ++s) {
    for (int32_t in : plan.steps[s].inputs)
      if (in >= 0) last[in] = s;
    for (int32_t out : plan.steps[s].outputs)
      if (out >= 0 && first[out] < 0) first[out] = s;
  }
  for (int32_t v = 0; v < static_cast<int32_t>(plan.values.size()); ++v) {
    ValueEntry& e = plan.values[v];
    if (e.kind != ValueEntry::Kind::kActivation) continue;
    // A tensor whose size depends on data gets no arena slot: the runtime allocates it. One of
    // unknown rank (an element taken from a sequence whose tensors' rank is not known) is recorded
    // with dims [] like a scalar, so it gets a scalar's slot; a larger one is allocated at run time.
    uint64_t bytes = 0;
    if ((max_known[v] || e.max_dims.empty()) && dims_static(e.max_dims)) {
      // Shape inference bounded the elements by max_tensor_elements; the bytes must fit too.
      auto n = checked_numel(e.max_dims, INT64_MAX / 16);
      if (!n.ok()) return invalid_model("activation '" + e.name + "': " + n.status().message());
      bytes = static_cast<uint64_t>(*n) * dtype_size(e.dtype);
    }
    e.arena_size = bytes;
    req.push_back({bytes, first[v], std::max(first[v], last[v])});
    req_value.push_back(v);
    if (report) report->naive_arena_bytes += bytes;
  }
  const size_t views = config.passes.view_aliasing ? alias_views(plan, req_value, req) : 0;
  if (views) log_verbose("memory plan: " + std::to_string(views) + " view steps share their input's bytes");
  MemoryPlan mp = plan_memory(req);
  for (size_t i = 0; i < req.size(); ++i) plan.values[req_value[i]].arena_offset = mp.offsets[i];
  plan.arena_size = mp.arena_size;

  auto io = [&](ir::ValueId id) {
    plan::IoTensor t;
    int32_t v = index.at(id);
    t.name = plan.values[v].name;
    t.value = v;
    t.dtype = plan.values[v].dtype;
    t.dims = plan.values[v].dims;
    if (auto it = profiles.find(id); it != profiles.end()) {
      t.min = it->second.min;
      t.opt = it->second.opt;
      t.max = it->second.max;
    } else if (max_known[v] && dims_static(plan.values[v].max_dims)) {
      t.max = plan.values[v].max_dims;  // outputs: the largest shape the profile allows
    }  // else: the output's size depends on input data; known only at run time
    return t;
  };
  for (ir::ValueId id : g.inputs) plan.inputs.push_back(io(id));
  for (ir::ValueId id : g.outputs) plan.outputs.push_back(io(id));
  SRT_RETURN_IF_ERROR(plan::record_capacity_layouts(plan));  // KV caches (builder/kv_cache.cc)
  if (report) {
    report->steps = plan.steps.size();
    report->arena_bytes = plan.arena_size;
  }
  return plan;
}

}  // namespace streamrt::builder
