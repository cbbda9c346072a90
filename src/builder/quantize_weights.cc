#include "builder/quantize_weights.h"

#include <chrono>
#include <map>
#include <optional>

#include "builder/calibrate.h"
#include "builder/gptq.h"
#include "builder/weight_matmul.h"

namespace streamrt::builder {
namespace {

bool float_2d_constant(const ir::Graph& g, ir::ValueId v) {
  const Tensor* t = v == ir::kNoValue ? nullptr : g.constant(v);
  return t && is_float(t->dtype()) && t->dims().size() == 2 && t->dims()[0] > 0 && t->dims()[1] > 0;
}

// A step that may read its weight compressed: a float constant.
std::optional<WeightMatMul> candidate(const ir::Graph& g, size_t i) {
  auto c = weight_matmul(g, i);
  if (!c || !float_2d_constant(g, c->weight)) return std::nullopt;
  return c;
}

// `u`: the GPTQ factor of the step's input (calibrated), else null (rounded to nearest).
Result<WeightOnlyInputs> pack(ir::Graph& g, const WeightMatMul& c, const WeightQuant& q, const std::vector<float>* u) {
  const Tensor w = *g.constant(c.weight);  // a copy (shared storage): adding values may move g's
  const std::string name = g.value(c.weight).name;
  WeightOnlyInputs p;
  p.fmt.bits = q.scheme == WeightQuantScheme::kInt4 ? 4 : 8;
  p.fmt.fp8 = q.scheme == WeightQuantScheme::kFp8;
  p.fmt.group = p.fmt.bits == 4 ? q.group : 0;
  p.fmt.k = c.k;
  p.fmt.n = c.n;
  ops::QuantizedWeight qw;
  if (u) {
    SRT_ASSIGN_OR_RETURN(qw, quantize_weight_gptq(w, c.trans, p.fmt, *u, name));
  } else {
    SRT_ASSIGN_OR_RETURN(qw, ops::quantize_weight(w, c.trans, 0, p.fmt, name));
  }
  p.packed = add_constant(g, name + "::q", std::move(qw.packed));
  p.scales = add_constant(g, name + "::scales", std::move(qw.scales));
  if (p.fmt.bits == 4) p.zeros = add_constant(g, name + "::zeros", std::move(qw.zeros));
  return p;
}

void rewrite(ir::Graph& g, const WeightMatMul& c, const WeightOnlyInputs& p, bool calibrated) {
  const Dims dims = g.constant(c.weight)->dims();
  const std::string source = g.value(c.weight).name;
  make_weight_only_matmul(g, c, p);
  ir::Node& n = g.nodes[c.node];
  n.attrs["__source"] = ir::Attribute::make_string(source);
  n.attrs["__source_dims"] = ir::Attribute::make_ints(dims);
  n.attrs["__trans"] = ir::Attribute::make_int(c.trans);
  if (calibrated) n.attrs["__calibrated"] = ir::Attribute::make_int(1);  // refit warns that it only rounds
}

// The steps whose weights may be quantized: no other reader, one orientation, not an output.
std::vector<WeightMatMul> eligible(const ir::Graph& g) {
  std::vector<WeightMatMul> cands;
  // Per weight: its candidate readers' count and orientation, and whether anything else reads it.
  std::map<ir::ValueId, std::pair<int, bool>> readers;
  std::map<ir::ValueId, bool> excluded;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (auto c = candidate(g, i)) {
      cands.push_back(*c);
      auto [it, fresh] = readers.emplace(c->weight, std::pair<int, bool>{0, c->trans});
      if (!fresh && it->second.second != c->trans) excluded[c->weight] = true;
      it->second.first++;
    }
  std::map<ir::ValueId, int> uses;
  for (const ir::Node& n : g.nodes)
    for (ir::ValueId v : n.inputs)
      if (readers.count(v)) uses[v]++;
  for (ir::ValueId o : g.outputs)
    if (readers.count(o)) excluded[o] = true;
  std::vector<WeightMatMul> out;
  for (const WeightMatMul& c : cands)
    if (!excluded[c.weight] && uses[c.weight] == readers[c.weight].first) out.push_back(c);
  return out;
}

}  // namespace

Status quantize_weights(ir::Graph& g, const BuilderConfig& config,
                        const std::unordered_map<ir::ValueId, InputProfile>& profiles, BuildReport& report) {
  const WeightQuant& q = config.weight_quant;
  if (q.scheme == WeightQuantScheme::kNone) {
    if (!q.calibration.empty())
      return invalid_argument("weight_quant: calibration inputs were given without a quantization scheme (int8, "
                              "int4 or fp8)");
    return ok_status();
  }
  if (q.scheme == WeightQuantScheme::kInt4 && q.group != 32 && q.group != 64 && q.group != 128)
    return invalid_argument("weight_quant int4: the group must be 32, 64 or 128, got " + std::to_string(q.group));
  const std::vector<WeightMatMul> steps = eligible(g);
  std::map<ir::ValueId, WeightOnlyInputs> packed;
  std::map<ir::ValueId, bool> calibrated;
  // `u`: the GPTQ factor of the step's input, or null. A weight read by several steps is quantized
  // once, for the first of them.
  auto quantize = [&](const WeightMatMul& c, const std::vector<float>* u) -> Status {
    auto it = packed.find(c.weight);
    if (it == packed.end()) {
      SRT_ASSIGN_OR_RETURN(WeightOnlyInputs p, pack(g, c, q, u));
      it = packed.emplace(c.weight, p).first;
      calibrated[c.weight] = u != nullptr;
    }
    rewrite(g, c, it->second, calibrated[c.weight]);
    ++report.steps_quantized;
    report.steps_calibrated += calibrated[c.weight];
    return ok_status();
  };
  if (q.calibration.empty()) {
    for (const WeightMatMul& c : steps) SRT_RETURN_IF_ERROR(quantize(c, nullptr));
    return ok_status();
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ir::Graph before = g;  // the float graph the calibration runs (constants shared, not copied)
  std::map<ir::ValueId, int64_t> inputs;  // each MatMul input and its K (its own dims may be unknown here)
  for (const WeightMatMul& c : steps) inputs.emplace(g.nodes[c.node].inputs[0], c.k);
  for (const auto& group : statistics_groups(inputs)) {
    SRT_ASSIGN_OR_RETURN(auto stats, collect_input_statistics(before, group, profiles, config));
    for (auto& [v, s] : stats) {
      auto u = gptq_inverse_factor(s);
      if (!u.ok()) return u.status().with_context("calibration statistics of '" + before.value(v).name + "'");
      s.xtx = {};
      for (const WeightMatMul& c : steps)
        if (before.nodes[c.node].inputs[0] == v) SRT_RETURN_IF_ERROR(quantize(c, &*u));
    }
  }
  report.calibration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return ok_status();
}

}  // namespace streamrt::builder

namespace streamrt {

Result<WeightQuant> parse_weight_quant(const std::string& spec) {
  WeightQuant q;
  if (spec == "none") return q;
  if (spec == "int8") {
    q.scheme = WeightQuantScheme::kInt8;
    return q;
  }
  if (spec == "fp8") {
    q.scheme = WeightQuantScheme::kFp8;
    return q;
  }
  if (spec == "int4" || spec == "int4:32" || spec == "int4:64" || spec == "int4:128") {
    q.scheme = WeightQuantScheme::kInt4;
    q.group = spec == "int4" ? 128 : std::stoi(spec.substr(5));
    return q;
  }
  return invalid_argument("weight quantization '" + spec + "': expected none, int8, fp8, int4 or int4:GROUP with "
                          "GROUP 32, 64 or 128");
}

std::string weight_quant_name(const WeightQuant& q) {
  switch (q.scheme) {
    case WeightQuantScheme::kNone: return "none";
    case WeightQuantScheme::kInt8: return "int8";
    case WeightQuantScheme::kInt4: return "int4:" + std::to_string(q.group);
    case WeightQuantScheme::kFp8: return "fp8";
  }
  return "?";
}

}  // namespace streamrt
