#include "plan/capacity_layout.h"

#include <map>
#include <utility>

#include "core/capacity_layout.h"
#include "ops/op.h"

namespace streamrt::plan {
namespace {

std::string step_name(const PlanData& p, size_t s) {
  const ir::Node& n = p.steps[s];
  return "step " + std::to_string(s) + " '" + n.name + "' (" + n.op_type + ")";
}

std::string layout_name(const ValueLayout& l) {
  return l.capacity == 0 ? std::string("dense")
                         : "with capacity " + std::to_string(l.capacity) + " along axis " + std::to_string(l.axis);
}

// The layouts step `s` declares, keyed by (is output, slot), axes normalized with the values' ranks.
Result<std::map<std::pair<bool, size_t>, ValueLayout>> declared(const PlanData& p, size_t s,
                                                                const ops::OpSchema& schema) {
  std::map<std::pair<bool, size_t>, ValueLayout> out;
  if (!schema.capacity_layouts) return out;
  const ir::Node& n = p.steps[s];
  for (const ops::CapacityLayout& c : schema.capacity_layouts(n)) {
    const std::vector<int32_t>& slots = c.output ? n.outputs : n.inputs;
    const std::string where = step_name(p, s) + (c.output ? " output " : " input ") + std::to_string(c.index);
    if (c.index < 0 || static_cast<size_t>(c.index) >= slots.size() || slots[c.index] < 0) {
      if (c.index >= 0 && static_cast<size_t>(c.index) < slots.size()) continue;  // an absent optional tensor
      return invalid_plan(where + ": the op declares a capacity layout for a tensor the step does not have");
    }
    const auto rank = static_cast<int64_t>(p.values[static_cast<size_t>(slots[c.index])].dims.size());
    const int64_t axis = c.axis < 0 ? c.axis + rank : c.axis;
    if (axis < 0 || axis >= rank || c.capacity <= 0 || c.capacity > ops::kMaxAttrExtent)
      return invalid_plan(where + ": capacity " + std::to_string(c.capacity) + " along axis " +
                          std::to_string(c.axis) + " does not fit a tensor of rank " + std::to_string(rank));
    out[{c.output, static_cast<size_t>(c.index)}] = ValueLayout{c.capacity, static_cast<int32_t>(axis)};
  }
  return out;
}

Status check_io_layout(const PlanData& p, const IoTensor& io, const char* what) {
  const std::string where = std::string(what) + " '" + io.name + "'";
  if (io.seq_capacity == 0 && io.seq_axis == 0) return ok_status();
  const auto rank = static_cast<int64_t>(io.dims.size());
  if (io.seq_capacity <= 0 || io.seq_capacity > ops::kMaxAttrExtent || io.seq_axis < 0 || io.seq_axis >= rank)
    return invalid_plan(where + " has seq_capacity " + std::to_string(io.seq_capacity) + " along seq_axis " +
                        std::to_string(io.seq_axis) + ": expected 0 / 0 (dense) or a capacity in [1, 2^30] along "
                        "an axis of its rank " + std::to_string(rank));
  if (!p.values[static_cast<size_t>(io.value)].seq.is_tensor())
    return invalid_plan(where + " is a sequence or optional value; only tensors take a capacity");
  const Dims& ref = io.max.empty() ? io.dims : io.max;
  if (ref[io.seq_axis] > io.seq_capacity)
    return invalid_plan(where + " reaches " + std::to_string(ref[io.seq_axis]) + " along axis " +
                        std::to_string(io.seq_axis) + ", beyond its seq_capacity " + std::to_string(io.seq_capacity));
  Dims stored = ref;
  stored[io.seq_axis] = io.seq_capacity;
  for (int64_t& d : stored) d = std::max<int64_t>(d, 1);
  const uint64_t n = stored_numel(stored, io.seq_axis, io.seq_capacity);
  if (n == UINT64_MAX || n > static_cast<uint64_t>(INT64_MAX) / std::max<size_t>(dtype_size(io.dtype), 1))
    return invalid_plan(where + " at seq_capacity " + std::to_string(io.seq_capacity) + " holds too many elements");
  return ok_status();
}

}  // namespace

std::vector<ValueLayout> value_layouts(const PlanData& plan) {
  std::vector<ValueLayout> out(plan.values.size());
  for (const auto* list : {&plan.inputs, &plan.outputs})
    for (const IoTensor& io : *list) out[static_cast<size_t>(io.value)] = {io.seq_capacity, io.seq_axis};
  return out;
}

Status check_capacity_layouts(const PlanData& plan) {
  for (const IoTensor& io : plan.inputs) SRT_RETURN_IF_ERROR(check_io_layout(plan, io, "input"));
  for (const IoTensor& io : plan.outputs) SRT_RETURN_IF_ERROR(check_io_layout(plan, io, "output"));
  const std::vector<ValueLayout> have = value_layouts(plan);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const ir::Node& n = plan.steps[s];
    const ops::OpSchema* schema = ops::schema_of(n);
    if (!schema) continue;  // an op this streamrt lacks: loading reports it (kIncompatible)
    SRT_ASSIGN_OR_RETURN(auto want, declared(plan, s, *schema));
    auto check = [&](bool output, size_t k, int32_t v) -> Status {
      if (v < 0 || (!output && ops::lists_input(schema->dims_only_inputs, k))) return ok_status();
      auto it = want.find({output, k});
      const ValueLayout w = it == want.end() ? ValueLayout{} : it->second;
      if (w == have[static_cast<size_t>(v)]) return ok_status();
      return invalid_plan(step_name(plan, s) + (output ? " writes" : " reads") + " '" +
                          plan.values[static_cast<size_t>(v)].name + "' " + layout_name(w) + ", but it is stored " +
                          layout_name(have[static_cast<size_t>(v)]));
    };
    for (size_t k = 0; k < n.inputs.size(); ++k) SRT_RETURN_IF_ERROR(check(false, k, n.inputs[k]));
    for (size_t k = 0; k < n.outputs.size(); ++k) SRT_RETURN_IF_ERROR(check(true, k, n.outputs[k]));
  }
  return ok_status();
}

Status record_capacity_layouts(PlanData& plan) {
  std::map<int32_t, IoTensor*> io_of;
  for (auto* list : {&plan.inputs, &plan.outputs})
    for (IoTensor& io : *list) io_of[io.value] = &io;
  std::vector<bool> set(plan.values.size(), false);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const ops::OpSchema* schema = ops::schema_of(plan.steps[s]);
    if (!schema) continue;
    auto want = declared(plan, s, *schema);
    if (!want.ok()) return internal_error(want.status().message());
    for (const auto& [slot, layout] : *want) {
      const ir::Node& n = plan.steps[s];
      const int32_t v = (slot.first ? n.outputs : n.inputs)[slot.second];
      auto it = io_of.find(v);
      if (it == io_of.end())
        return internal_error(step_name(plan, s) + " declares a capacity layout for '" + plan.values[v].name +
                              "', which is not an engine input or output");
      IoTensor& io = *it->second;
      const ValueLayout had{io.seq_capacity, io.seq_axis};
      if (set[v] && !(had == layout))
        return internal_error(step_name(plan, s) + " stores '" + io.name + "' " + layout_name(layout) +
                              ", another step " + layout_name(had));
      io.seq_capacity = layout.capacity;
      io.seq_axis = layout.axis;
      set[v] = true;
    }
  }
  Status st = check_capacity_layouts(plan);
  return st.ok() ? st : internal_error(st.message());
}

}  // namespace streamrt::plan
