// Semantic checks of a plan (the list is at the top of plan.h). They run on every plan read
// from a file, after the FlatBuffers verifier, so everything here is untrusted input: every
// index is range-checked and every size product is checked for overflow.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_set>

#include "builder/memory_planner.h"
#include "ir/shape_inference.h"
#include "ir/subgraph.h"
#include "plan/capacity_layout.h"
#include "plan/plan.h"
#include "plan/view_steps.h"

namespace streamrt::plan {

static_assert(kArenaAlignment == builder::kArenaAlignment, "the verifier checks the memory planner's alignment");

namespace {

std::string num(int64_t v) { return std::to_string(v); }
std::string unum(uint64_t v) { return std::to_string(v); }

// Dims as written, e.g. "[2, -5, 3]" (dims_to_string would hide invalid values as '?').
std::string raw_dims(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + num(d[i]);
  return s + "]";
}

Status check_dtype(DataType t, const std::string& where) {
  if (!is_valid_dtype(static_cast<int>(t)))
    return invalid_plan(where + " has invalid dtype " + num(static_cast<int>(t)));
  return ok_status();
}

// Every dim >= -1 and the product of the non-zero known dims, in bytes, fits in int64: so
// strides and byte sizes computed from them later cannot overflow. Dynamic dims count as 1.
Status check_dims(const Dims& d, DataType t, const std::string& where, const char* field) {
  const int64_t esize = std::max<int64_t>(1, static_cast<int64_t>(dtype_size(t)));
  const int64_t limit = INT64_MAX / esize;
  int64_t n = 1;
  for (int64_t v : d) {
    if (v < kDynamicDim)
      return invalid_plan(where + " has invalid " + field + " " + raw_dims(d));
    if (v <= 0) continue;
    if (n > limit / v)
      return invalid_plan(where + " " + field + " " + raw_dims(d) + " hold too many elements");
    n *= v;
  }
  return ok_status();
}

// Byte size of static dims (call after check_dims).
uint64_t static_bytes(const Dims& d, DataType t) {
  return static_cast<uint64_t>(dims_numel(d)) * dtype_size(t);
}

Status check_weights(const PlanData& p, uint64_t section) {
  std::unordered_set<std::string_view> names;
  for (size_t i = 0; i < p.weights.size(); ++i) {
    const WeightEntry& w = p.weights[i];
    const std::string where = "weight " + unum(i) + " '" + w.name + "'";
    SRT_RETURN_IF_ERROR(check_dtype(w.dtype, where));
    SRT_RETURN_IF_ERROR(check_dims(w.dims, w.dtype, where, "dims"));
    if (!dims_static(w.dims)) return invalid_plan(where + " has dynamic dims " + raw_dims(w.dims));
    uint64_t need = static_bytes(w.dims, w.dtype);
    if (w.size != need)
      return invalid_plan(where + " has size " + unum(w.size) + " but " +
                          dims_to_string(w.dims) + " " + dtype_name(w.dtype) + " needs " +
                          unum(need) + " bytes");
    if (w.offset % kWeightAlignment != 0)
      return invalid_plan(where + " offset " + unum(w.offset) + " is not " +
                          unum(kWeightAlignment) + "-byte aligned");
    if (!p.weights_stripped && (w.offset > section || w.size > section - w.offset))
      return invalid_plan(where + " extends past the end of the weights section (offset " +
                          unum(w.offset) + " + " + unum(w.size) + " > " + unum(section) + ")");
    if (!names.insert(w.name).second) return invalid_plan(where + " has a duplicate name");
  }
  return ok_status();
}

Status check_values(const PlanData& p) {
  for (size_t i = 0; i < p.values.size(); ++i) {
    const ValueEntry& v = p.values[i];
    const std::string where = "value " + unum(i) + " '" + v.name + "'";
    SRT_RETURN_IF_ERROR(check_dtype(v.dtype, where));
    SRT_RETURN_IF_ERROR(check_dims(v.dims, v.dtype, where, "dims"));
    SRT_RETURN_IF_ERROR(check_dims(v.max_dims, v.dtype, where, "max_dims"));
    if (Status st = ir::check_seq_type(v.seq, v.dtype, v.dims, where); !st.ok()) return invalid_plan(st.message());
    if (!v.max_dims.empty() && v.max_dims.size() != v.dims.size())
      return invalid_plan(where + " has max_dims " + raw_dims(v.max_dims) + " of another rank than dims " +
                          raw_dims(v.dims));
    switch (v.kind) {
      case ValueEntry::Kind::kActivation: {
        if (v.arena_offset > p.arena_size || v.arena_size > p.arena_size - v.arena_offset)
          return invalid_plan(where + " lies outside the arena (offset " + unum(v.arena_offset) +
                              " + size " + unum(v.arena_size) + " > arena_size " +
                              unum(p.arena_size) + ")");
        if (v.max_dims.size() == v.dims.size() && dims_static(v.max_dims)) {
          uint64_t need = static_bytes(v.max_dims, v.dtype);
          if (v.arena_size < need)
            return invalid_plan(where + " reserves " + unum(v.arena_size) + " arena bytes but " +
                                dims_to_string(v.max_dims) + " " + dtype_name(v.dtype) +
                                " needs " + unum(need));
        }
        break;
      }
      case ValueEntry::Kind::kInput:
      case ValueEntry::Kind::kOutput: break;
      case ValueEntry::Kind::kWeight: {
        if (v.weight_index < 0 || static_cast<size_t>(v.weight_index) >= p.weights.size())
          return invalid_plan(where + " has weight_index " + num(v.weight_index) +
                              ", out of range (" + unum(p.weights.size()) + " weights)");
        const WeightEntry& w = p.weights[static_cast<size_t>(v.weight_index)];
        if (w.dtype != v.dtype || w.dims != v.dims)
          return invalid_plan(where + " is " + dtype_name(v.dtype) + " " + raw_dims(v.dims) +
                              " but its weight '" + w.name + "' is " + dtype_name(w.dtype) + " " +
                              raw_dims(w.dims));
        break;
      }
      default:
        return invalid_plan(where + " has invalid kind " + num(static_cast<int>(v.kind)));
    }
  }
  return ok_status();
}

// Input and output values are the user's buffers: each one must be listed as such (once), and
// each listed tensor must be a value of that kind. Otherwise a step could write a value that no
// address is ever bound to (found by plan_run_fuzz: an output value missing from the list).
Status check_io_kinds(const PlanData& p) {
  std::vector<int> listed(p.values.size(), 0);
  auto mark = [&](const std::vector<IoTensor>& list, ValueEntry::Kind kind, const char* what) -> Status {
    for (const IoTensor& io : list) {
      const ValueEntry& v = p.values[static_cast<size_t>(io.value)];
      if (v.kind != kind || listed[static_cast<size_t>(io.value)]++)
        return invalid_plan(std::string(what) + " '" + io.name + "' names value " + num(io.value) + " '" + v.name +
                            "', which is not an " + what + " value, or is listed twice");
    }
    return ok_status();
  };
  SRT_RETURN_IF_ERROR(mark(p.inputs, ValueEntry::Kind::kInput, "input"));
  SRT_RETURN_IF_ERROR(mark(p.outputs, ValueEntry::Kind::kOutput, "output"));
  for (size_t i = 0; i < p.values.size(); ++i) {
    const ValueEntry::Kind k = p.values[i].kind;
    if ((k == ValueEntry::Kind::kInput || k == ValueEntry::Kind::kOutput) && !listed[i])
      return invalid_plan("value " + unum(i) + " '" + p.values[i].name + "' is an " +
                          (k == ValueEntry::Kind::kInput ? "input" : "output") + " the plan does not list");
  }
  return ok_status();
}

// One optimization-profile bound: empty, or static dims of the tensor's rank that agree with
// its static dims.
Status check_profile_dims(const IoTensor& io, const Dims& d, const char* field,
                          const std::string& where) {
  if (d.empty()) return ok_status();
  if (d.size() != io.dims.size())
    return invalid_plan(where + " profile " + field + " " + raw_dims(d) + " has another rank than dims " +
                        raw_dims(io.dims));
  SRT_RETURN_IF_ERROR(check_dims(d, io.dtype, where, field));
  for (size_t k = 0; k < d.size(); ++k) {
    if (d[k] < 0) return invalid_plan(where + " profile " + field + " " + raw_dims(d) + " is not static");
    if (io.dims[k] >= 0 && d[k] != io.dims[k])
      return invalid_plan(where + " profile " + field + " " + raw_dims(d) +
                          " disagrees with static dims " + raw_dims(io.dims));
  }
  return ok_status();
}

Status check_io(const PlanData& p, const std::vector<IoTensor>& list, const char* what, bool input) {
  for (size_t i = 0; i < list.size(); ++i) {
    const IoTensor& io = list[i];
    const std::string where = std::string(what) + " " + unum(i) + " '" + io.name + "'";
    if (io.value < 0 || static_cast<size_t>(io.value) >= p.values.size())
      return invalid_plan(where + " has value index " + num(io.value) + ", out of range (" +
                          unum(p.values.size()) + " values)");
    SRT_RETURN_IF_ERROR(check_dtype(io.dtype, where));
    const ValueEntry& v = p.values[static_cast<size_t>(io.value)];
    if (v.dtype != io.dtype)
      return invalid_plan(where + " is " + dtype_name(io.dtype) + " but its value '" + v.name +
                          "' is " + dtype_name(v.dtype));
    SRT_RETURN_IF_ERROR(check_dims(io.dims, io.dtype, where, "dims"));
    SRT_RETURN_IF_ERROR(check_profile_dims(io, io.min, "min", where));
    SRT_RETURN_IF_ERROR(check_profile_dims(io, io.opt, "opt", where));
    SRT_RETURN_IF_ERROR(check_profile_dims(io, io.max, "max", where));
    // An input's profile bounds every shape it may take (set_input_shape compares dims with min and
    // max element by element): all three or none. An output records only its planned max.
    if (input && (io.min.empty() != io.max.empty() || io.opt.empty() != io.max.empty()))
      return invalid_plan(where + " has a partial optimization profile (min " + raw_dims(io.min) + ", opt " +
                          raw_dims(io.opt) + ", max " + raw_dims(io.max) + "): give all three or none");
    if (!io.min.empty() && !io.opt.empty() && !io.max.empty())
      for (size_t k = 0; k < io.dims.size(); ++k)
        if (io.min[k] > io.opt[k] || io.opt[k] > io.max[k])
          return invalid_plan(where + " profile dim " + unum(k) + " is not min <= opt <= max (" +
                              num(io.min[k]) + ", " + num(io.opt[k]) + ", " + num(io.max[k]) + ")");
  }
  return ok_status();
}

Status check_index(int32_t id, size_t n, const std::string& where) {
  if (id != ir::kNoValue && (id < 0 || static_cast<size_t>(id) >= n))
    return invalid_plan(where + " is value index " + num(id) + ", out of range (" + unum(n) +
                        " values)");
  return ok_status();
}

Status check_attribute(const ir::Attribute& a, const std::string& where) {
  if (static_cast<int>(a.kind) > static_cast<int>(ir::Attribute::Kind::kGraph))
    return invalid_plan(where + " has invalid kind " + num(static_cast<int>(a.kind)));
  if (a.kind == ir::Attribute::Kind::kGraph) {
    if (!a.g) return invalid_plan(where + " has kind graph but holds no graph");
    // A body is checked as the steps are: indices, order, dtypes, dims, nesting.
    if (Status st = ir::check_subgraph(*a.g, 1, where); !st.ok()) return invalid_plan(st.message());
    return ok_status();
  }
  if (a.kind != ir::Attribute::Kind::kTensor) return ok_status();
  if (a.t.empty()) return invalid_plan(where + " has kind tensor but holds no tensor");
  SRT_RETURN_IF_ERROR(check_dtype(a.t.dtype(), where));
  SRT_RETURN_IF_ERROR(check_dims(a.t.dims(), a.t.dtype(), where, "dims"));
  if (!dims_static(a.t.dims()))
    return invalid_plan(where + " tensor has dynamic dims " + raw_dims(a.t.dims()));
  return ok_status();
}

// Measured times: step_ms none or one per step, each finite and not negative; min_run_ms too.
Status check_step_times(const PlanData& p) {
  const std::vector<float>& ms = p.step_ms;
  if (!ms.empty() && ms.size() != p.steps.size())
    return invalid_plan("step_ms has " + unum(ms.size()) + " entries for " + unum(p.steps.size()) + " steps");
  for (size_t i = 0; i < ms.size(); ++i)
    if (!std::isfinite(ms[i]) || ms[i] < 0)
      return invalid_plan("step_ms[" + unum(i) + "] is " + std::to_string(ms[i]) + " (a time in ms, >= 0)");
  if (!std::isfinite(p.min_run_ms) || p.min_run_ms < 0)
    return invalid_plan("min_run_ms is " + std::to_string(p.min_run_ms) + " (a time in ms, >= 0)");
  return ok_status();
}

Status check_steps(const PlanData& p) {
  const size_t n = p.values.size();
  std::vector<int32_t> producer(n, -1);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const ir::Node& node = p.steps[s];
    const std::string where = "step " + unum(s) + " '" + node.name + "' (" + node.op_type + ")";
    for (size_t k = 0; k < node.inputs.size(); ++k)
      SRT_RETURN_IF_ERROR(check_index(node.inputs[k], n, where + " input " + unum(k)));
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      int32_t id = node.outputs[k];
      SRT_RETURN_IF_ERROR(check_index(id, n, where + " output " + unum(k)));
      if (id == ir::kNoValue) continue;
      const ValueEntry& v = p.values[static_cast<size_t>(id)];
      if (v.kind != ValueEntry::Kind::kActivation && v.kind != ValueEntry::Kind::kOutput)
        return invalid_plan(where + " output " + unum(k) + " writes value '" + v.name +
                            "', which is not an activation or output");
      if (producer[static_cast<size_t>(id)] >= 0)
        return invalid_plan(where + " output " + unum(k) + " writes value '" + v.name +
                            "', already produced by step " +
                            num(producer[static_cast<size_t>(id)]));
      producer[static_cast<size_t>(id)] = static_cast<int32_t>(s);
    }
    for (const auto& [name, a] : node.attrs)
      SRT_RETURN_IF_ERROR(check_attribute(a, where + " attribute '" + name + "'"));
  }
  return ok_status();
}


std::string step_where(const PlanData& p, size_t s) {
  const ir::Node& n = p.steps[s];
  return "step " + unum(s) + " '" + n.name + "' (" + n.op_type + ")";
}

// Step `s`'s output `k` (value `v`) against what its shape rule gives at the profile's max:
// same dtype; where the rule knows every dim, the recorded dims' static entries and max_dims
// agree with it, and an activation's arena slot holds it. A shape the rule cannot know (it
// depends on data) is sized at run time and left alone.
Status check_step_output(const PlanData& p, size_t s, size_t k, const ops::TensorInfo& info) {
  const ValueEntry& v = p.values[static_cast<size_t>(p.steps[s].outputs[k])];
  const std::string where = step_where(p, s) + " output " + unum(k) + " '" + v.name + "'";
  if (info.dtype != DataType::kUndefined && info.dtype != v.dtype)
    return invalid_plan(where + " is recorded as " + dtype_name(v.dtype) + " but the op makes " +
                        dtype_name(info.dtype));
  if (!info.has_shape || !dims_static(info.dims)) return ok_status();
  const std::string max_dims = raw_dims(info.dims);
  if (info.dims.size() != v.dims.size())
    return invalid_plan(where + " has dims " + raw_dims(v.dims) + " but the op makes " + max_dims +
                        " at the profile's max");
  for (size_t d = 0; d < v.dims.size(); ++d)
    if (v.dims[d] >= 0 && v.dims[d] != info.dims[d])
      return invalid_plan(where + " has dims " + raw_dims(v.dims) + " but the op makes " + max_dims +
                          " at the profile's max");
  if (v.max_dims != info.dims)
    return invalid_plan(where + " has max_dims " + raw_dims(v.max_dims) + " but the op makes " + max_dims +
                        " at the profile's max");
  auto n = checked_numel(info.dims, INT64_MAX / 8);
  if (!n.ok()) return invalid_plan(where + ": dims " + max_dims + " hold too many elements");
  const uint64_t need = static_cast<uint64_t>(*n) * dtype_size(v.dtype);
  if (v.kind == ValueEntry::Kind::kActivation && need > v.arena_size)
    return invalid_plan(where + " reserves " + unum(v.arena_size) + " arena bytes but " + max_dims + " " +
                        dtype_name(v.dtype) + " at the profile's max needs " + unum(need));
  return ok_status();
}

// Re-runs every step's shape rule, after its op's verify hook, on the profile's max input dims
// (weights' contents known, small shape tensors propagated, as the builder's memory plan did),
// and holds each output against the plan. So no attribute or weight can make a step allocate
// beyond what the plan declares for its largest inputs, nor a kernel index past its tensors.
Status check_step_shapes(const PlanData& p) {
  // An op this streamrt lacks is not a broken plan: loading it reports kIncompatible.
  for (const ir::Node& n : p.steps)
    if (!ops::OpRegistry::global().find(n.op_type, n.domain)) return ok_status();
  const ir::Graph g = step_graph(p);
  ir::InferOptions opts;
  for (const IoTensor& io : p.inputs) opts.input_dims[io.value] = io.max.empty() ? io.dims : io.max;
  size_t at = 0;
  opts.before_node = [&](size_t s, const ops::InferContext&) {
    at = s;  // shape inference runs the op's verify hook, then its shape rule
    return ok_status();
  };
  auto r = ir::infer_shapes_readonly(g, opts);
  if (!r.ok()) return invalid_plan(step_where(p, at) + " at the profile's max: " + r.status().message());
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (size_t k = 0; k < p.steps[s].outputs.size(); ++k)
      if (p.steps[s].outputs[k] != ir::kNoValue)
        SRT_RETURN_IF_ERROR(check_step_output(p, s, k, r->infos[static_cast<size_t>(p.steps[s].outputs[k])]));
  return ok_status();
}

// A set of activations sharing one arena slot (a tensor and its views) and the steps it spans.
struct Slot {
  uint64_t offset = 0, size = 0;
  int32_t first = 0, last = 0;
  size_t value = 0;  // a member, for messages
};

// Every activation aligned as the memory planner aligns; two whose lifetimes (first producing
// step to last reading step, as the planner counts them) overlap share no byte unless one is a
// view of the other (a view step whose output has its input's slot).
Status check_arena_layout(const PlanData& p) {
  const size_t n = p.values.size();
  std::vector<int32_t> first(n, -1), last(n, -1);
  for (int32_t s = 0; s < static_cast<int32_t>(p.steps.size()); ++s) {
    for (int32_t in : p.steps[s].inputs)
      if (in >= 0) last[in] = s;
    for (int32_t out : p.steps[s].outputs)
      if (out >= 0 && first[out] < 0) first[out] = s;
  }
  auto is_act = [&](int32_t v) { return v >= 0 && p.values[v].kind == ValueEntry::Kind::kActivation; };
  std::vector<size_t> root(n);
  for (size_t v = 0; v < n; ++v) root[v] = v;
  for (const ir::Node& step : p.steps) {
    if (!is_view_step(step) || !is_act(step.inputs[0]) || !is_act(step.outputs[0])) continue;
    const ValueEntry& in = p.values[step.inputs[0]];
    const ValueEntry& out = p.values[step.outputs[0]];
    if (step.inputs[0] != step.outputs[0] && in.arena_offset == out.arena_offset && in.arena_size == out.arena_size)
      root[step.outputs[0]] = root[step.inputs[0]];  // the input's root is final: it is produced earlier
  }
  std::vector<Slot> slots;
  std::vector<int64_t> slot_of(n, -1);
  for (size_t v = 0; v < n; ++v) {
    const ValueEntry& e = p.values[v];
    if (e.kind != ValueEntry::Kind::kActivation) continue;
    if (e.arena_offset % kArenaAlignment != 0)
      return invalid_plan("value " + unum(v) + " '" + e.name + "' has arena_offset " + unum(e.arena_offset) +
                          ", not " + unum(kArenaAlignment) + "-byte aligned");
    if (e.arena_size == 0) continue;
    const int32_t lo = first[v], hi = std::max(first[v], last[v]);
    int64_t& id = slot_of[root[v]];
    if (id < 0) {
      id = static_cast<int64_t>(slots.size());
      slots.push_back({e.arena_offset, e.arena_size, lo, hi, v});
    } else {
      slots[id].first = std::min(slots[id].first, lo);
      slots[id].last = std::max(slots[id].last, hi);
    }
  }
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.offset < b.offset; });
  for (size_t i = 0; i < slots.size(); ++i) {
    const Slot& a = slots[i];
    for (size_t j = i + 1; j < slots.size() && slots[j].offset < a.offset + a.size; ++j) {
      const Slot& b = slots[j];
      if (a.first > b.last || b.first > a.last) continue;
      return invalid_plan("value " + unum(a.value) + " '" + p.values[a.value].name + "' (arena bytes " +
                          unum(a.offset) + "+" + unum(a.size) + ", steps " + num(a.first) + ".." + num(a.last) +
                          ") and value " + unum(b.value) + " '" + p.values[b.value].name + "' (arena bytes " +
                          unum(b.offset) + "+" + unum(b.size) + ", steps " + num(b.first) + ".." + num(b.last) +
                          ") are alive at once in overlapping arena bytes");
    }
  }
  return ok_status();
}

}  // namespace

ir::Graph step_graph(const PlanData& plan) {
  ir::Graph g;
  g.name = plan.name;
  for (const auto& v : plan.values) {
    g.add_value(v.name, v.dtype, v.dims, true);
    g.values.back().seq = v.seq;
  }
  if (!plan.weights_stripped && plan.weight_data.size() == plan.weights.size())
    for (size_t v = 0; v < plan.values.size(); ++v)
      if (plan.values[v].kind == ValueEntry::Kind::kWeight)
        g.constants[static_cast<ir::ValueId>(v)] = plan.weight_data[static_cast<size_t>(plan.values[v].weight_index)];
  g.nodes = plan.steps;
  for (const auto& io : plan.inputs) g.inputs.push_back(io.value);
  for (const auto& io : plan.outputs) g.outputs.push_back(io.value);
  return g;
}

Status verify_plan(const PlanData& plan, uint64_t weights_section_size) {
  // Weights first: values refer to them.
  SRT_RETURN_IF_ERROR(check_weights(plan, weights_section_size));
  SRT_RETURN_IF_ERROR(check_values(plan));
  SRT_RETURN_IF_ERROR(check_io(plan, plan.inputs, "input", true));
  SRT_RETURN_IF_ERROR(check_io(plan, plan.outputs, "output", false));
  SRT_RETURN_IF_ERROR(check_io_kinds(plan));
  SRT_RETURN_IF_ERROR(check_step_times(plan));
  SRT_RETURN_IF_ERROR(check_steps(plan));
  // The checks above make every index safe to follow.
  SRT_RETURN_IF_ERROR(check_capacity_layouts(plan));
  return check_arena_layout(plan);
}

Status verify_plan_steps(const PlanData& plan) { return check_step_shapes(plan); }

}  // namespace streamrt::plan
