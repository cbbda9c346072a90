// Semantic checks of a plan (the list is at the top of plan.h). They run on every plan read
// from a file, after the FlatBuffers verifier, so everything here is untrusted input: every
// index is range-checked and every size product is checked for overflow.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_set>

#include "plan/plan.h"

namespace streamrt::plan {

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

Status check_io(const PlanData& p, const std::vector<IoTensor>& list, const char* what) {
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
  if (static_cast<int>(a.kind) > static_cast<int>(ir::Attribute::Kind::kTensor))
    return invalid_plan(where + " has invalid kind " + num(static_cast<int>(a.kind)));
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

}  // namespace

Status verify_plan(const PlanData& plan, uint64_t weights_section_size) {
  // Weights first: values refer to them.
  SRT_RETURN_IF_ERROR(check_weights(plan, weights_section_size));
  SRT_RETURN_IF_ERROR(check_values(plan));
  SRT_RETURN_IF_ERROR(check_io(plan, plan.inputs, "input"));
  SRT_RETURN_IF_ERROR(check_io(plan, plan.outputs, "output"));
  SRT_RETURN_IF_ERROR(check_step_times(plan));
  return check_steps(plan);
}

}  // namespace streamrt::plan
