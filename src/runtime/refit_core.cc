#include "runtime/refit_core.h"

#include <bit>
#include <cstring>

#include "builder/build_steps.h"
#include "core/logging.h"
#include "onnx/importer.h"
#include "ir/subgraph.h"
#include "ops/op.h"
#include "ops/weight_quant.h"
#include "runtime/device_backend.h"

namespace streamrt::refit {
namespace {

std::string describe(DataType t, const Dims& d) { return std::string(dtype_name(t)) + " " + dims_to_string(d); }

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  if (a.empty()) return true;
  size_t n = a.nbytes();
  return n == 0 || (a.data() && b.data() && std::memcmp(a.data(), b.data(), n) == 0);
}

bool same_attribute(const ir::Attribute& a, const ir::Attribute& b) {
  if (a.kind != b.kind) return false;
  using K = ir::Attribute::Kind;
  auto bits = [](const std::vector<float>& v) {
    std::vector<uint32_t> out;
    for (float f : v) out.push_back(std::bit_cast<uint32_t>(f));
    return out;
  };
  switch (a.kind) {
    case K::kInt: return a.i == b.i;
    case K::kFloat: return std::bit_cast<uint32_t>(a.f) == std::bit_cast<uint32_t>(b.f);
    case K::kString: return a.s == b.s;
    case K::kInts: return a.ints == b.ints;
    case K::kFloats: return bits(a.floats) == bits(b.floats);
    case K::kStrings: return a.strings == b.strings;
    case K::kTensor: return same_tensor(a.t, b.t);
    case K::kGraph: return a.g && b.g && ir::same_graph(*a.g, *b.g, same_attribute);
  }
  return false;
}

// One edge of a step against the node's: both omitted, or the same name, dtype and dims.
Status check_edge(const plan::PlanData& p, int32_t pv, const ir::Graph& g, ir::ValueId gv, const std::string& where) {
  if ((pv < 0) != (gv == ir::kNoValue))
    return invalid_argument(where + " is " + (pv < 0 ? "omitted in the plan but not in the model" : "omitted in the model but not in the plan"));
  if (pv < 0) return ok_status();
  const plan::ValueEntry& a = p.values[pv];
  const ir::Value& b = g.value(gv);
  if (a.name != b.name) return invalid_argument(where + " is '" + a.name + "' in the plan, '" + b.name + "' in the model");
  if (a.dtype != b.dtype || a.dims != b.dims)
    return invalid_argument(where + " ('" + a.name + "') is " + describe(a.dtype, a.dims) + " in the plan, " +
                            describe(b.dtype, b.dims) + " in the model");
  return ok_status();
}

Status check_step(const plan::PlanData& p, size_t k, const ir::Graph& g) {
  const ir::Node& s = p.steps[k];
  const ir::Node& n = g.nodes[k];
  const std::string where = "step " + std::to_string(k) + " " + s.describe();
  if (s.op_type != n.op_type || s.domain != n.domain || s.opset != n.opset)
    return invalid_argument(where + " (opset " + std::to_string(s.opset) + ") is " + n.describe() + " (opset " +
                            std::to_string(n.opset) + ") in the model");
  if (s.inputs.size() != n.inputs.size() || s.outputs.size() != n.outputs.size())
    return invalid_argument(where + " has " + std::to_string(s.inputs.size()) + " inputs and " +
                            std::to_string(s.outputs.size()) + " outputs, the model's node " +
                            std::to_string(n.inputs.size()) + " and " + std::to_string(n.outputs.size()));
  for (size_t j = 0; j < s.inputs.size(); ++j)
    SRT_RETURN_IF_ERROR(check_edge(p, s.inputs[j], g, n.inputs[j], where + " input " + std::to_string(j)));
  for (size_t j = 0; j < s.outputs.size(); ++j)
    SRT_RETURN_IF_ERROR(check_edge(p, s.outputs[j], g, n.outputs[j], where + " output " + std::to_string(j)));
  // Every attribute of the model's node must be in the step with the same value. Attributes only
  // the step has (a later build stage may record choices there) are not the model's business.
  for (const auto& [name, a] : n.attrs) {
    auto it = s.attrs.find(name);
    if (it == s.attrs.end() || !same_attribute(a, it->second))
      return invalid_argument(where + ": attribute '" + name + "' differs from the model's");
  }
  return ok_status();
}

Status check_io(const plan::PlanData& p, const std::vector<plan::IoTensor>& io, const ir::Graph& g,
                const std::vector<ir::ValueId>& gio, const char* what) {
  if (io.size() != gio.size())
    return invalid_argument(std::string("the plan has ") + std::to_string(io.size()) + " " + what + ", the model " +
                            std::to_string(gio.size()));
  for (size_t i = 0; i < io.size(); ++i)
    SRT_RETURN_IF_ERROR(check_edge(p, io[i].value, g, gio[i], std::string(what) + " " + std::to_string(i)));
  return ok_status();
}

}  // namespace

std::vector<bool> shape_weights(const plan::PlanData& p) {
  std::vector<bool> out(p.weights.size(), false);
  for (const ir::Node& s : p.steps) {
    const ops::OpSchema* schema = ops::OpRegistry::global().find(s.op_type, s.domain);
    if (!schema) continue;
    for (int i : schema->shape_inputs) {
      if (i < 0 || static_cast<size_t>(i) >= s.inputs.size() || s.inputs[i] < 0) continue;
      const plan::ValueEntry& v = p.values[s.inputs[i]];
      if (v.kind == plan::ValueEntry::Kind::kWeight && v.weight_index >= 0) out[v.weight_index] = true;
    }
  }
  return out;
}

Status check_structure(const plan::PlanData& p, const ir::Graph& g, const std::string& source) {
  auto wrap = [&](Status st) {
    return st.ok() ? st : invalid_argument("'" + source + "' does not have the plan's structure: " + st.message());
  };
  if (p.steps.size() != g.nodes.size())
    return wrap(invalid_argument("the plan has " + std::to_string(p.steps.size()) + " steps, the model " +
                                 std::to_string(g.nodes.size()) + " after optimization"));
  SRT_RETURN_IF_ERROR(wrap(check_io(p, p.inputs, g, g.inputs, "inputs")));
  SRT_RETURN_IF_ERROR(wrap(check_io(p, p.outputs, g, g.outputs, "outputs")));
  for (size_t k = 0; k < p.steps.size(); ++k) SRT_RETURN_IF_ERROR(wrap(check_step(p, k, g)));
  return ok_status();
}

Result<std::vector<Tensor>> weights_from_graph(const plan::PlanData& p, const ir::Graph& g, const std::string& source) {
  std::vector<Tensor> out;
  out.reserve(p.weights.size());
  for (const plan::WeightEntry& w : p.weights) {
    ir::ValueId v = g.find_value(w.name);
    const Tensor* t = v == ir::kNoValue ? nullptr : g.constant(v);
    if (!t)
      return invalid_argument("plan weight '" + w.name + "' (" + describe(w.dtype, w.dims) + ") is not a weight of '" +
                              source + "'");
    if (t->dtype() != w.dtype || t->dims() != w.dims)
      return invalid_argument("plan weight '" + w.name + "' is " + describe(w.dtype, w.dims) + ", in '" + source +
                              "' it is " + describe(t->dtype(), t->dims()));
    out.push_back(*t);
  }
  return out;
}

Result<std::map<int32_t, Tensor>> quantize_source_weight(const plan::PlanData& p, const std::string& name,
                                                          const Tensor& value) {
  std::map<int32_t, Tensor> out;
  auto weight_of = [&](const ir::Node& s, size_t i) -> int32_t {
    if (i >= s.inputs.size() || s.inputs[i] < 0) return -1;
    const plan::ValueEntry& v = p.values[s.inputs[i]];
    return v.kind == plan::ValueEntry::Kind::kWeight ? v.weight_index : -1;
  };
  for (const ir::Node& s : p.steps) {
    if (s.op_type != ops::kWeightOnlyMatMul || !s.domain.empty()) continue;
    if (auto codes = s.attr_string("__prequantized", ""); codes.ok() && *codes == name)
      return unsupported("weight '" + name + "' holds codes the model stored quantized (DequantizeLinear / "
                         "MatMulNBits), which the plan keeps in its own layout: refit the plan weights '" + name +
                         "::q', '" + name + "::scales' (and '::zeros'), or refit from the ONNX model");
    auto source = s.attr_string("__source", "");
    if (!source.ok() || *source != name) continue;
    SRT_ASSIGN_OR_RETURN(ops::WeightQuantFormat f, ops::read_weight_quant_format(s));
    SRT_ASSIGN_OR_RETURN(Dims dims, s.attr_ints("__source_dims"));
    SRT_ASSIGN_OR_RETURN(int64_t trans, s.attr_int("__trans", 0));
    SRT_ASSIGN_OR_RETURN(int64_t n0, s.attr_int("__n_offset", 0));
    const int32_t packed = weight_of(s, 1), scales = weight_of(s, 2), zeros = weight_of(s, 3);
    if (packed < 0 || scales < 0 || (f.bits == 4 && zeros < 0))
      return invalid_argument(s.describe() + " reads weight '" + name + "' compressed, but not from plan weights");
    const DataType dtype = p.weights[scales].dtype;
    if (value.dtype() != dtype || value.dims() != dims)
      return invalid_argument("weight '" + name + "' is " + describe(dtype, dims) + " (stored quantized), got " +
                              describe(value.dtype(), value.dims()));
    if (auto cal = s.attr_int("__calibrated", 0); cal.ok() && *cal != 0 && out.empty())
      log_warning("refit of weight '" + name + "': it was quantized with calibration inputs (GPTQ) at build; "
                  "refit has none and rounds the new values to nearest, which is less accurate than a rebuild "
                  "with the same calibration");
    SRT_ASSIGN_OR_RETURN(ops::QuantizedWeight q, ops::quantize_weight(value, trans != 0, n0, f, name));
    out[packed] = std::move(q.packed);
    out[scales] = std::move(q.scales);
    if (f.bits == 4) out[zeros] = std::move(q.zeros);
  }
  if (out.empty()) return not_found("no step reads a weight '" + name + "'");
  return out;
}

BuilderConfig config_from_plan(const plan::PlanData& p, DataType precision) {
  BuilderConfig c;
  // Quantized steps: the scheme they were built with, so the model prepares to the same steps.
  for (const ir::Node& s : p.steps)
    if (s.op_type == ops::kWeightOnlyMatMul && s.domain.empty() && !s.has_attr("__prequantized")) {
      auto f = ops::read_weight_quant_format(s);
      if (!f.ok()) break;
      c.weight_quant.scheme = f->bits == 4 ? WeightQuantScheme::kInt4
                              : f->fp8    ? WeightQuantScheme::kFp8
                                          : WeightQuantScheme::kInt8;
      if (f->bits == 4) c.weight_quant.group = static_cast<int>(f->group);
      break;
    }
  c.device = p.device.kind == plan::DeviceKind::kCuda ? DeviceType::kCuda : DeviceType::kCpu;
  const DeviceBackend* b = find_device_backend(c.device);
  if (!b || !b->available().ok()) c.device = DeviceType::kCpu;
  c.float_precision = precision;
  for (const plan::IoTensor& io : p.inputs) {
    if (dims_static(io.dims)) c.shapes[io.name] = io.dims;
    else c.profiles[io.name] = ShapeProfile{io.min, io.opt, io.max};
  }
  return c;
}

Result<std::vector<Tensor>> weights_from_onnx(const plan::PlanData& p, const std::string& onnx_path) {
  SRT_ASSIGN_OR_RETURN(ir::Graph imported, onnx_import::import_onnx_file(onnx_path));
  std::vector<DataType> precisions = {DataType::kFloat32};
  for (DataType half : {DataType::kFloat16, DataType::kBFloat16})
    for (const plan::ValueEntry& v : p.values)
      if (v.dtype == half) {
        precisions.push_back(half);
        break;
      }
  Status last;
  for (DataType precision : precisions) {
    BuilderConfig config = config_from_plan(p, precision);
    auto prepared = builder::prepare_graph(imported, onnx_path, config, nullptr);
    if (!prepared.ok()) {
      last = prepared.status();
      continue;
    }
    auto weights = weights_from_graph(p, prepared->graph, onnx_path);
    Status st = weights.ok() ? check_structure(p, prepared->graph, onnx_path) : weights.status();
    if (st.ok()) return weights;
    last = st;
  }
  return last;
}

Status apply_weights(plan::PlanData& p, ir::Graph* graph, const std::map<int32_t, Tensor>& staged,
                     const RefitHook& hook) {
  if (p.weight_data.size() != p.weights.size()) p.weight_data.resize(p.weights.size());  // stripped: none yet
  std::vector<std::vector<ir::ValueId>> values_of(p.weights.size());
  for (size_t v = 0; v < p.values.size(); ++v)
    if (p.values[v].kind == plan::ValueEntry::Kind::kWeight && p.values[v].weight_index >= 0 &&
        static_cast<size_t>(p.values[v].weight_index) < p.weights.size())
      values_of[p.values[v].weight_index].push_back(static_cast<ir::ValueId>(v));
  auto set = [&](int32_t i, const Tensor& t) {
    p.weight_data[i] = t;
    if (!graph) return;
    for (ir::ValueId v : values_of[i]) {
      if (t.empty()) graph->constants.erase(v);
      else graph->constants[v] = t;
    }
  };
  std::vector<std::pair<int32_t, Tensor>> old;
  std::vector<int32_t> changed;
  for (const auto& [i, t] : staged) {
    old.emplace_back(i, p.weight_data[i]);
    set(i, t);
    changed.push_back(i);
  }
  const bool was_stripped = p.weights_stripped;
  bool complete = true;
  for (const Tensor& t : p.weight_data) complete = complete && !t.empty();
  if (complete) p.weights_stripped = false;
  Status st = hook ? hook(changed) : ok_status();
  if (st.ok()) return st;
  for (const auto& [i, t] : old) set(i, t);
  p.weights_stripped = was_stripped;
  if (hook) (void)hook(changed);  // best effort: put the old values back where the hook copied them
  return st;
}

}  // namespace streamrt::refit
