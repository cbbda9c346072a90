#include "builder/tactics.h"

#include <bit>
#include <chrono>
#include <cstdio>

#include "core/logging.h"
#include "ir/shape_inference.h"

namespace streamrt::builder {

// ---------------------------------------------------------------------------------------
// The "__lt_algo" record

ir::Attribute encode_lt_algo(const LtAlgoRecord& r) {
  std::vector<int64_t> v = {kLtAlgoMagic,
                            static_cast<int64_t>(r.library_version),
                            static_cast<int64_t>(r.flags),
                            r.m, r.n, r.k, r.batch,
                            r.candidates, r.rank, r.best_ns, r.heuristic_ns};
  for (uint64_t w : r.algo) v.push_back(std::bit_cast<int64_t>(w));
  return ir::Attribute::make_ints(std::move(v));
}

// Decoded by the CUDA kernels on every call: the message is built only on failure.
Result<LtAlgoRecord> decode_lt_algo(const ir::Attribute& a) {
  auto bad = [](const std::string& msg) { return invalid_plan(std::string("attribute '") + kLtAlgoAttr + "'" + msg); };
  if (a.kind != ir::Attribute::Kind::kInts)
    return bad(std::string(" is ") + ir::attribute_kind_name(a.kind) + ", expected ints");
  const std::vector<int64_t>& v = a.ints;
  if (v.size() != kLtAlgoRecordSize)
    return bad(" has " + std::to_string(v.size()) + " values, expected " + std::to_string(kLtAlgoRecordSize));
  if (v[0] != kLtAlgoMagic) return bad(" does not start with the record magic (another layout version?)");
  LtAlgoRecord r;
  if (v[1] <= 0) return bad(": cuBLASLt version " + std::to_string(v[1]) + " is not positive");
  r.library_version = static_cast<uint64_t>(v[1]);
  if (v[2] < 0 || (static_cast<uint64_t>(v[2]) & ~uint64_t{kLtAlgoTf32 | kLtAlgoBias}) != 0)
    return bad(": unknown flags " + std::to_string(v[2]));
  r.flags = static_cast<uint32_t>(v[2]);
  r.m = v[3], r.n = v[4], r.k = v[5], r.batch = v[6];
  r.candidates = v[7], r.rank = v[8], r.best_ns = v[9], r.heuristic_ns = v[10];
  if (r.m <= 0 || r.n <= 0 || r.k <= 0 || r.batch <= 0)
    return bad(": GEMM " + std::to_string(r.m) + "x" + std::to_string(r.n) + "x" + std::to_string(r.k) + " batch " +
               std::to_string(r.batch) + " is not positive");
  if (r.candidates <= 0 || r.rank < 0 || r.rank >= r.candidates || r.best_ns < 0 || r.heuristic_ns < 0)
    return bad(": winner #" + std::to_string(r.rank) + " of " + std::to_string(r.candidates) + " candidates (times " +
               std::to_string(r.best_ns) + " / " + std::to_string(r.heuristic_ns) + " ns) is inconsistent");
  for (size_t i = 0; i < kLtAlgoWords; ++i) r.algo[i] = std::bit_cast<uint64_t>(v[11 + i]);
  return r;
}

bool lt_algo_applies(const LtAlgoRecord& r, uint64_t library_version, uint32_t flags) {
  return r.library_version == library_version && r.flags == flags;
}

TacticCounters& tactic_counters() {
  static TacticCounters counters;
  return counters;
}

bool step_allows_tf32(const ir::Node& step) {
  auto it = step.attrs.find(kTf32Attr);
  return it != step.attrs.end() && it->second.kind == ir::Attribute::Kind::kInt && it->second.i == 1;
}

std::string describe_tactics(const ir::Node& step) {
  std::string out;
  if (auto it = step.attrs.find(kLtAlgoAttr); it != step.attrs.end()) {
    auto r = decode_lt_algo(it->second);
    char buf[256];
    if (!r.ok()) {
      out = "cuBLASLt algo: unreadable (" + r.status().message() + "), the heuristic decides";
    } else {
      std::snprintf(buf, sizeof buf, "cuBLASLt algo: heuristic #%lld of %lld, %.1f us (#0: %.1f us) at %lldx%lldx%lld",
                    static_cast<long long>(r->rank), static_cast<long long>(r->candidates), r->best_ns / 1e3,
                    r->heuristic_ns / 1e3, static_cast<long long>(r->m), static_cast<long long>(r->n),
                    static_cast<long long>(r->k));
      out = buf;
      if (r->batch > 1) out += " batch " + std::to_string(r->batch);
      if (r->flags & kLtAlgoBias) out += " with bias";
      out += ", cuBLASLt " + std::to_string(r->library_version);
    }
  }
  if (step_allows_tf32(step)) out += out.empty() ? "tf32" : "; tf32";
  return out;
}

// ---------------------------------------------------------------------------------------
// Tuner registry

namespace {

TacticTuner*& slot(DeviceType t) {
  static TacticTuner* tuners[2] = {nullptr, nullptr};  // never destroyed
  return tuners[static_cast<int>(t)];
}

bool tf32_op(const ir::Node& step) {
  return step.domain.empty() && (step.op_type == "MatMul" || step.op_type == "Gemm" || step.op_type == "Conv");
}

// Every value's dtype and dims at the profile's opt shapes: the plan's steps as a graph, as the
// runtime's shape passes see it.
Result<ir::InferResult> infer_at_opt(const plan::PlanData& plan) {
  ir::Graph g;
  for (const auto& v : plan.values) g.add_value(v.name, v.dtype, v.dims, true);
  for (size_t v = 0; v < plan.values.size(); ++v) {
    const plan::ValueEntry& e = plan.values[v];
    if (e.kind == plan::ValueEntry::Kind::kWeight && !plan.weights_stripped &&
        static_cast<size_t>(e.weight_index) < plan.weight_data.size())
      g.constants[static_cast<ir::ValueId>(v)] = plan.weight_data[e.weight_index];
  }
  g.nodes = plan.steps;
  ir::InferOptions opts;
  for (const auto& io : plan.inputs) {
    g.inputs.push_back(io.value);
    opts.input_dims[io.value] = io.opt.empty() ? io.dims : io.opt;
  }
  for (const auto& io : plan.outputs) g.outputs.push_back(io.value);
  return ir::infer_shapes_readonly(g, opts);
}

// The step's inputs at opt, or nullopt when one of them has no static shape there.
std::optional<std::vector<ops::TensorInfo>> step_inputs(const ir::Node& step, const ir::InferResult& opt) {
  std::vector<ops::TensorInfo> in(step.inputs.size());
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    const int32_t v = step.inputs[k];
    if (v < 0) continue;
    const ops::TensorInfo& info = opt.infos[static_cast<size_t>(v)];
    if (!info.has_shape || !dims_static(info.dims)) return std::nullopt;
    in[k] = {info.dtype, info.dims, true, nullptr};
  }
  return in;
}

// Times every step it can; a step that fails keeps the heuristic. A device error ends the
// tuning (the device may be unusable for the rest of it).
Status tune_steps(plan::PlanData& plan, TacticTuner& tuner, BuildReport& rep) {
  auto opt = infer_at_opt(plan);
  if (!opt.ok()) {
    log_warning("tactics: shapes at the profile's opt are not known (" + opt.status().message() +
                "); every step keeps the run-time heuristic");
    return ok_status();
  }
  std::unique_ptr<TacticSession> session;
  for (ir::Node& step : plan.steps) {
    auto in = step_inputs(step, *opt);
    if (!in) continue;
    if (!session) {
      auto opened = tuner.open();
      if (!opened.ok()) {
        log_warning("tactics: cannot time on the device (" + opened.status().to_string() +
                    "); every step keeps the run-time heuristic");
        return ok_status();
      }
      session = std::move(opened).value();
    }
    auto tuned = session->tune(step, *in);
    if (tuned.ok()) {
      rep.steps_tuned += *tuned ? 1 : 0;
      continue;
    }
    log_warning("tactics: " + step.describe() + " keeps the run-time heuristic: " + tuned.status().to_string());
    if (tuned.status().code() == StatusCode::kDeviceError) break;
  }
  return ok_status();
}

}  // namespace

void register_tactic_tuner(TacticTuner* tuner) {
  if (!slot(tuner->device())) slot(tuner->device()) = tuner;
  else delete tuner;
}

TacticTuner* find_tactic_tuner(DeviceType device) { return slot(device); }

Status choose_tactics(plan::PlanData& plan, const BuilderConfig& config, BuildReport* report, TacticTuner* tuner) {
  BuildReport local;
  BuildReport& rep = report ? *report : local;
  if (config.device != DeviceType::kCuda) {
    if (config.allow_tf32) log_info("tf32: no effect on the " + std::string(device_type_name(config.device)));
    return ok_status();
  }
  if (config.allow_tf32)
    for (ir::Node& step : plan.steps)
      if (tf32_op(step) && !step.inputs.empty() && step.inputs[0] >= 0 &&
          plan.values[static_cast<size_t>(step.inputs[0])].dtype == DataType::kFloat32)
        step.attrs[kTf32Attr] = ir::Attribute::make_int(1);
  if (!config.tactics) return ok_status();
  if (!tuner) tuner = find_tactic_tuner(config.device);
  if (!tuner) return ok_status();
  const auto t0 = std::chrono::steady_clock::now();
  Status st = tune_steps(plan, *tuner, rep);
  rep.tactic_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace streamrt::builder
