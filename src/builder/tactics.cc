#include "builder/tactics.h"

#include <bit>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "builder/progress.h"
#include "core/logging.h"
#include "ir/shape_inference.h"

namespace streamrt::builder {

// ---------------------------------------------------------------------------------------
// The "__lt_algo" record

namespace {

// What every record starts with: ints, `size` of them, `magic` first, then a positive version
// of `library`. kInvalidPlan naming `attr` otherwise.
Status check_record_start(const ir::Attribute& a, const char* attr, size_t size, int64_t magic, const char* library) {
  auto bad = [&](const std::string& msg) { return invalid_plan(std::string("attribute '") + attr + "'" + msg); };
  if (a.kind != ir::Attribute::Kind::kInts)
    return bad(std::string(" is ") + ir::attribute_kind_name(a.kind) + ", expected ints");
  const std::vector<int64_t>& v = a.ints;
  if (v.size() != size) return bad(" has " + std::to_string(v.size()) + " values, expected " + std::to_string(size));
  if (v[0] != magic) return bad(" does not start with the record magic (another layout version?)");
  if (v[1] <= 0) return bad(std::string(": ") + library + " version " + std::to_string(v[1]) + " is not positive");
  return ok_status();
}

}  // namespace

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
  SRT_RETURN_IF_ERROR(check_record_start(a, kLtAlgoAttr, kLtAlgoRecordSize, kLtAlgoMagic, "cuBLASLt"));
  const std::vector<int64_t>& v = a.ints;
  LtAlgoRecord r;
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

ir::Attribute encode_group_gemm(const GroupGemmRecord& r) {
  return ir::Attribute::make_ints({r.cols, r.group_ns, r.lt_ns, r.rows});
}

Result<GroupGemmRecord> decode_group_gemm(const ir::Attribute& a) {
  auto bad = [](const std::string& msg) { return invalid_plan(std::string("attribute '") + kGroupGemmAttr + "'" + msg); };
  if (a.kind != ir::Attribute::Kind::kInts || (a.ints.size() != 3 && a.ints.size() != 4))
    return bad(": expected 4 integers {cols, group_ns, lt_ns, rows}");
  const std::vector<int64_t>& v = a.ints;
  if (v[0] != 0 && v[0] != 128 && v[0] != 256) return bad(": cols is " + std::to_string(v[0]) + ", not 0, 128 or 256");
  if (v[1] < 0 || v[2] < 0) return bad(": negative time (" + std::to_string(v[1]) + " / " + std::to_string(v[2]) + " ns)");
  const int64_t rows = v.size() > 3 ? v[3] : 0;
  if (rows < 0) return bad(": negative rows (" + std::to_string(rows) + ")");
  return GroupGemmRecord{static_cast<int>(v[0]), v[1], v[2], rows};
}

int step_group_gemm_cols(const ir::Node& step, int64_t rows) {
  auto it = step.attrs.find(kGroupGemmAttr);
  if (it == step.attrs.end()) return 0;
  auto r = decode_group_gemm(it->second);
  if (!r.ok() || (r->rows > 0 && rows > kGroupGemmRowsReach * r->rows)) return 0;
  return r->cols;
}

ir::Attribute encode_few_row(const FewRowRecord& r) {
  return ir::Attribute::make_ints({r.kernel ? 1 : 0, r.kernel_ns, r.steps_ns, r.rows});
}

Result<FewRowRecord> decode_few_row(const ir::Attribute& a) {
  auto bad = [](const std::string& msg) { return invalid_plan(std::string("attribute '") + kFewRowAttr + "'" + msg); };
  if (a.kind != ir::Attribute::Kind::kInts || a.ints.size() != 4)
    return bad(": expected 4 integers {kernel, kernel_ns, steps_ns, rows}");
  const std::vector<int64_t>& v = a.ints;
  if (v[0] != 0 && v[0] != 1) return bad(": kernel is " + std::to_string(v[0]) + ", not 0 or 1");
  if (v[1] < 0 || v[2] < 0) return bad(": negative time (" + std::to_string(v[1]) + " / " + std::to_string(v[2]) + " ns)");
  if (v[3] < 1 || v[3] > 8) return bad(": rows is " + std::to_string(v[3]) + ", not 1 to 8");
  return FewRowRecord{v[0] == 1, v[1], v[2], v[3]};
}

bool step_few_row_kernel(const ir::Node& step, int64_t rows) {
  auto it = step.attrs.find(kFewRowAttr);
  if (it == step.attrs.end()) return true;
  auto r = decode_few_row(it->second);
  if (!r.ok() || (r->rows == 1) != (rows == 1)) return true;
  return r->kernel;
}

bool lt_algo_applies(const LtAlgoRecord& r, uint64_t library_version, uint32_t flags) {
  return r.library_version == library_version && r.flags == flags;
}

// ---------------------------------------------------------------------------------------
// The "__conv_algo" record

namespace {

constexpr size_t kConvProblemAt = 6;  // first word of the ConvProblem

const char* const kConvAlgoNames[kConvAlgoCount] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                                    "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
const char* const kConvMathNames[kConvMathCount] = {"default math", "tensor-op math", "tensor-op math with conversion",
                                                    "FMA math"};

std::string join_dims(const int64_t* d, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += 'x';
    s += std::to_string(d[i]);
  }
  return s;
}

// "" when `p` describes a convolution cuDNN could have been given, else what is wrong with it.
std::string conv_problem_error(const ConvProblem& p) {
  const auto t = static_cast<DataType>(p.dtype);
  if (p.dtype < 0 || p.dtype > 255 || !is_float(t)) return "data type " + std::to_string(p.dtype) + " is not a float type";
  if (p.spatial != 2 && p.spatial != 3) return std::to_string(p.spatial) + " spatial axes (expected 2 or 3)";
  const size_t used = static_cast<size_t>(p.spatial);
  for (size_t i = 0; i < p.x.size(); ++i)
    if ((i < used + 2) != (p.x[i] > 0 && p.w[i] > 0) || (i >= used + 2 && (p.x[i] != 0 || p.w[i] != 0)))
      return "X " + join_dims(p.x.data(), p.x.size()) + " / W " + join_dims(p.w.data(), p.w.size()) +
             " do not have " + std::to_string(used + 2) + " positive dims";
  for (size_t i = 0; i < p.pads.size(); ++i) {
    const bool u = i < used;
    if (u ? (p.pads[i] < 0 || p.strides[i] < 1 || p.dilations[i] < 1)
          : (p.pads[i] != 0 || p.strides[i] != 0 || p.dilations[i] != 0))
      return "pads / strides / dilations of axis " + std::to_string(i) + " (" + std::to_string(p.pads[i]) + ", " +
             std::to_string(p.strides[i]) + ", " + std::to_string(p.dilations[i]) + ") are out of range";
  }
  if (p.group < 1 || p.x[1] != p.w[1] * p.group || p.w[0] % p.group != 0)
    return "group " + std::to_string(p.group) + " does not fit X " + join_dims(p.x.data(), used + 2) + " and W " +
           join_dims(p.w.data(), used + 2);
  return "";
}

}  // namespace

ir::Attribute encode_conv_algo(const ConvAlgoRecord& r) {
  const ConvProblem& p = r.problem;
  std::vector<int64_t> v = {kConvAlgoMagic, static_cast<int64_t>(r.library_version), static_cast<int64_t>(r.flags),
                            r.algo, r.math, r.workspace, p.dtype, p.group, p.spatial};
  for (const auto* a : {&p.x, &p.w}) v.insert(v.end(), a->begin(), a->end());
  for (const auto* a : {&p.pads, &p.strides, &p.dilations}) v.insert(v.end(), a->begin(), a->end());
  v.insert(v.end(), {r.candidates, r.rank, r.best_ns, r.heuristic_ns});
  return ir::Attribute::make_ints(std::move(v));
}

// Decoded by the CUDA kernel on every call: the message is built only on failure.
Result<ConvAlgoRecord> decode_conv_algo(const ir::Attribute& a) {
  auto bad = [](const std::string& msg) { return invalid_plan(std::string("attribute '") + kConvAlgoAttr + "'" + msg); };
  SRT_RETURN_IF_ERROR(check_record_start(a, kConvAlgoAttr, kConvAlgoRecordSize, kConvAlgoMagic, "cuDNN"));
  const std::vector<int64_t>& v = a.ints;
  ConvAlgoRecord r;
  r.library_version = static_cast<uint64_t>(v[1]);
  if (v[2] < 0 || (static_cast<uint64_t>(v[2]) & ~uint64_t{kConvAlgoTf32}) != 0)
    return bad(": unknown flags " + std::to_string(v[2]));
  r.flags = static_cast<uint32_t>(v[2]);
  r.algo = v[3], r.math = v[4], r.workspace = v[5];
  if (r.algo < 0 || r.algo >= kConvAlgoCount) return bad(": algorithm " + std::to_string(r.algo) + " is out of range");
  if (r.math < 0 || r.math >= kConvMathCount) return bad(": math type " + std::to_string(r.math) + " is out of range");
  if (r.workspace < 0) return bad(": workspace " + std::to_string(r.workspace) + " is negative");
  const int64_t* q = v.data() + kConvProblemAt;
  ConvProblem& p = r.problem;
  p.dtype = q[0], p.group = q[1], p.spatial = q[2];
  std::copy(q + 3, q + 8, p.x.begin());
  std::copy(q + 8, q + 13, p.w.begin());
  std::copy(q + 13, q + 16, p.pads.begin());
  std::copy(q + 16, q + 19, p.strides.begin());
  std::copy(q + 19, q + 22, p.dilations.begin());
  if (std::string why = conv_problem_error(p); !why.empty()) return bad(": convolution " + why);
  r.candidates = v[28], r.rank = v[29], r.best_ns = v[30], r.heuristic_ns = v[31];
  if (r.candidates <= 0 || r.rank < 0 || r.rank >= r.candidates || r.best_ns < 0 || r.heuristic_ns < 0)
    return bad(": winner #" + std::to_string(r.rank) + " of " + std::to_string(r.candidates) + " candidates (times " +
               std::to_string(r.best_ns) + " / " + std::to_string(r.heuristic_ns) + " ns) is inconsistent");
  return r;
}

bool conv_algo_applies(const ConvAlgoRecord& r, uint64_t library_version, uint32_t flags, const ConvProblem& problem) {
  return r.library_version == library_version && r.flags == flags && r.problem == problem;
}

TacticCounters& tactic_counters() {
  static TacticCounters counters;
  return counters;
}

bool step_allows_tf32(const ir::Node& step) {
  auto it = step.attrs.find(kTf32Attr);
  return it != step.attrs.end() && it->second.kind == ir::Attribute::Kind::kInt && it->second.i == 1;
}

namespace {

std::string describe_conv_algo(const ir::Attribute& a) {
  auto r = decode_conv_algo(a);
  if (!r.ok()) return "cuDNN conv algo: unreadable (" + r.status().message() + "), the heuristic decides";
  const ConvProblem& p = r->problem;
  const size_t used = static_cast<size_t>(p.spatial) + 2;
  char buf[256];
  std::snprintf(buf, sizeof buf, "cuDNN conv algo: %s, %s, #%lld of %lld, %.1f us (#0: %.1f us) at X %s W %s",
                kConvAlgoNames[r->algo], kConvMathNames[r->math], static_cast<long long>(r->rank),
                static_cast<long long>(r->candidates), r->best_ns / 1e3, r->heuristic_ns / 1e3,
                join_dims(p.x.data(), used).c_str(), join_dims(p.w.data(), used).c_str());
  std::string out = buf;
  if (p.group > 1) out += " group " + std::to_string(p.group);
  if (r->workspace > 0) out += ", workspace " + std::to_string(r->workspace) + " B";
  return out + ", cuDNN " + std::to_string(r->library_version);
}

std::string rows_note(int64_t rows) { return rows > 0 ? " at " + std::to_string(rows) + " rows" : std::string(); }

}  // namespace

std::string describe_tactics(const ir::Node& step) {
  std::string out;
  if (auto it = step.attrs.find(kConvAlgoAttr); it != step.attrs.end()) out = describe_conv_algo(it->second);
  // One record a GEMM of the step (a MatMulGroup has one a weight: lt_algo_attr).
  for (int part = 0; part < kLtAlgoParts; ++part) {
    auto it = step.attrs.find(lt_algo_attr(part));
    if (it == step.attrs.end()) continue;
    if (!out.empty()) out += "; ";
    if (part > 0) out += "GEMM " + std::to_string(part) + ": ";
    auto r = decode_lt_algo(it->second);
    char buf[256];
    if (!r.ok()) {
      out += "cuBLASLt algo: unreadable (" + r.status().message() + "), the heuristic decides";
    } else {
      std::snprintf(buf, sizeof buf, "cuBLASLt algo: heuristic #%lld of %lld, %.1f us (#0: %.1f us) at %lldx%lldx%lld",
                    static_cast<long long>(r->rank), static_cast<long long>(r->candidates), r->best_ns / 1e3,
                    r->heuristic_ns / 1e3, static_cast<long long>(r->m), static_cast<long long>(r->n),
                    static_cast<long long>(r->k));
      out += buf;
      if (r->batch > 1) out += " batch " + std::to_string(r->batch);
      if (r->flags & kLtAlgoBias) out += " with bias";
      out += ", cuBLASLt " + std::to_string(r->library_version);
    }
  }
  if (auto it = step.attrs.find(kGroupGemmAttr); it != step.attrs.end()) {
    if (!out.empty()) out += "; ";
    auto r = decode_group_gemm(it->second);
    char buf[160];
    if (!r.ok())
      std::snprintf(buf, sizeof buf, "group GEMM: unreadable record, cuBLASLt runs");
    else if (r->cols > 0)
      std::snprintf(buf, sizeof buf, "group GEMM of %d columns: %.1f us (cuBLASLt, a GEMM a weight: %.1f us)%s",
                    r->cols, r->group_ns / 1e3, r->lt_ns / 1e3, rows_note(r->rows).c_str());
    else
      std::snprintf(buf, sizeof buf, "cuBLASLt, a GEMM a weight: %.1f us (group GEMM: %.1f us)%s", r->lt_ns / 1e3,
                    r->group_ns / 1e3, rows_note(r->rows).c_str());
    out += buf;
  }
  if (auto it = step.attrs.find(kFewRowAttr); it != step.attrs.end()) {
    if (!out.empty()) out += "; ";
    auto r = decode_few_row(it->second);
    char buf[160];
    if (!r.ok())
      std::snprintf(buf, sizeof buf, "few-row kernel: unreadable record, the kernel runs");
    else
      std::snprintf(buf, sizeof buf, "%s: %.1f us (%s: %.1f us)%s",
                    r->kernel ? "few-row kernel" : "many-row path", (r->kernel ? r->kernel_ns : r->steps_ns) / 1e3,
                    r->kernel ? "many-row path" : "few-row kernel", (r->kernel ? r->steps_ns : r->kernel_ns) / 1e3,
                    rows_note(r->rows).c_str());
    out += buf;
  }
  if (step_allows_tf32(step)) out += out.empty() ? "tf32" : "; tf32";
  return out;
}

// ---------------------------------------------------------------------------------------
// Tuner registry

namespace {

// Offers each step to every session in turn until one tunes it (each knows its own ops).
class SessionSet final : public TacticSession {
 public:
  explicit SessionSet(std::vector<std::unique_ptr<TacticSession>> sessions) : sessions_(std::move(sessions)) {}
  Result<bool> tune(ir::Node& step, std::span<const ops::TensorInfo> inputs) override {
    for (auto& s : sessions_) {
      SRT_ASSIGN_OR_RETURN(bool tuned, s->tune(step, inputs));
      if (tuned) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<TacticSession>> sessions_;
};

class TunerSet final : public TacticTuner {
 public:
  TunerSet(DeviceType device, std::vector<TacticTuner*> tuners) : device_(device), tuners_(std::move(tuners)) {}
  DeviceType device() const override { return device_; }
  // A tuner that cannot open is left out (with a warning); an error only when none opens.
  Result<std::unique_ptr<TacticSession>> open() override {
    std::vector<std::unique_ptr<TacticSession>> sessions;
    Status last = ok_status();
    for (TacticTuner* t : tuners_) {
      auto s = t->open();
      if (s.ok()) {
        sessions.push_back(std::move(s).value());
      } else {
        log_warning("tactics: a tuner cannot time on the device (" + s.status().to_string() + ")");
        last = s.status();
      }
    }
    if (sessions.empty() && !last.ok()) return last;
    return std::unique_ptr<TacticSession>(std::make_unique<SessionSet>(std::move(sessions)));
  }

 private:
  DeviceType device_;
  std::vector<TacticTuner*> tuners_;
};

struct DeviceTuners {
  std::vector<TacticTuner*> tuners;  // registered, never destroyed
  std::unique_ptr<TacticTuner> combined;
};

DeviceTuners& slot(DeviceType t) {
  static DeviceTuners* tuners = new DeviceTuners[2];  // never destroyed: used from static initializers
  return tuners[static_cast<int>(t)];
}

bool tf32_op(const ir::Node& step) {
  const ops::OpSchema* s = ops::schema_of(step);
  return s && s->tf32;
}

// Every value's dtype and dims at the profile's opt shapes: the plan's steps as a graph, as the
// runtime's shape passes see it.
Result<ir::InferResult> infer_at_opt(const plan::PlanData& plan) {
  ir::Graph g;
  for (const auto& v : plan.values) {
    g.add_value(v.name, v.dtype, v.dims, true);
    g.values.back().seq = v.seq;
  }
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

// Appends a's kind and value to `out`, exactly (floats by their bits); false for a tensor or a
// subgraph, which no timed op carries and which are not worth comparing.
bool append_attribute(std::string& out, const ir::Attribute& a) {
  using K = ir::Attribute::Kind;
  out += std::to_string(static_cast<int>(a.kind));
  out += ':';
  switch (a.kind) {
    case K::kInt: out += std::to_string(a.i); break;
    case K::kFloat: out += std::to_string(std::bit_cast<uint32_t>(a.f)); break;
    case K::kString: out += std::to_string(a.s.size()) + '#' + a.s; break;
    case K::kInts:
      for (int64_t v : a.ints) out += std::to_string(v) + ',';
      break;
    case K::kFloats:
      for (float v : a.floats) out += std::to_string(std::bit_cast<uint32_t>(v)) + ',';
      break;
    case K::kStrings:
      for (const std::string& v : a.strings) out += std::to_string(v.size()) + '#' + v;
      break;
    case K::kTensor:
    case K::kGraph: return false;
  }
  out += ';';
  return true;
}

// What a tuner times: the step's op, its inputs' types and opt dims, its outputs and attributes.
// Two steps with one key are the same problem to every tuner (they time on random data), so the
// first one's records serve the other: a stack of identical layers is timed once, and every layer
// makes the same choice where separate timings, a few percent apart, could flip it from layer to
// layer. nullopt: not shared (an attribute holding a tensor or a subgraph).
std::optional<std::string> timing_key(const ir::Node& step, std::span<const ops::TensorInfo> in) {
  std::string key = step.domain + '|' + step.op_type + '|' + std::to_string(step.opset) + '|';
  for (const ops::TensorInfo& t : in)
    key += std::string(dtype_name(t.dtype)) + (t.dtype == DataType::kUndefined ? "" : dims_to_string(t.dims)) + ',';
  key += '|';
  for (ir::ValueId v : step.outputs) key += v == ir::kNoValue ? '-' : 'o';
  key += '|';
  for (const auto& [name, a] : step.attrs) {
    key += std::to_string(name.size()) + '#' + name + '=';
    if (!append_attribute(key, a)) return std::nullopt;
  }
  return key;
}

// What tuning a step did: whether it tuned and the attributes it wrote (its records).
struct TimedStep {
  bool tuned = false;
  std::map<std::string, ir::Attribute> records;
};

// The attributes of `after` that `before` lacks or held with another value.
std::map<std::string, ir::Attribute> written_attributes(const std::map<std::string, ir::Attribute>& before,
                                                        const std::map<std::string, ir::Attribute>& after) {
  std::map<std::string, ir::Attribute> out;
  for (const auto& [name, a] : after) {
    auto it = before.find(name);
    std::string was, now;
    if (it == before.end() || !append_attribute(was, it->second) || !append_attribute(now, a) || was != now)
      out.emplace(name, a);
  }
  return out;
}

// Times every step it can; a step that fails keeps the heuristic. A device error ends the
// tuning (the device may be unusable for the rest of it). A step the same as one timed before
// (timing_key) takes that one's records.
Status tune_steps(plan::PlanData& plan, TacticTuner& tuner, const BuilderConfig& config, BuildReport& rep) {
  const BuilderPasses& passes = config.passes;
  PhaseProgress progress(config, "tactics", plan.steps.size());
  auto opt = infer_at_opt(plan);
  if (!opt.ok()) {
    log_warning("tactics: shapes at the profile's opt are not known (" + opt.status().message() +
                "); every step keeps the run-time heuristic");
    return ok_status();
  }
  std::unique_ptr<TacticSession> session;
  std::map<std::string, TimedStep> timed;  // by timing_key
  for (ir::Node& step : plan.steps) {
    progress.advance();
    // Conv tactics are opt-in (BuilderPasses::conv_tactics says why).
    if (!passes.conv_tactics && step.op_type == "Conv" && step.domain.empty()) continue;
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
    const std::optional<std::string> key = timing_key(step, *in);
    if (auto it = key ? timed.find(*key) : timed.end(); it != timed.end()) {
      for (const auto& [name, a] : it->second.records) step.attrs[name] = a;
      rep.steps_tuned += it->second.tuned ? 1 : 0;
      rep.steps_tuned_reused += it->second.tuned ? 1 : 0;
      continue;
    }
    const std::map<std::string, ir::Attribute> before = step.attrs;
    auto tuned = session->tune(step, *in);
    if (tuned.ok()) {
      rep.steps_tuned += *tuned ? 1 : 0;
      if (key) timed.emplace(*key, TimedStep{*tuned, written_attributes(before, step.attrs)});
      continue;
    }
    log_warning("tactics: " + step.describe() + " keeps the run-time heuristic: " + tuned.status().to_string());
    if (tuned.status().code() == StatusCode::kDeviceError) break;
  }
  return ok_status();
}

}  // namespace

void register_tactic_tuner(TacticTuner* tuner) {
  DeviceTuners& d = slot(tuner->device());
  d.tuners.push_back(tuner);
  d.combined = d.tuners.size() > 1 ? combine_tactic_tuners(tuner->device(), d.tuners) : nullptr;
}

TacticTuner* find_tactic_tuner(DeviceType device) {
  DeviceTuners& d = slot(device);
  if (d.combined) return d.combined.get();
  return d.tuners.empty() ? nullptr : d.tuners.front();
}

std::unique_ptr<TacticTuner> combine_tactic_tuners(DeviceType device, std::vector<TacticTuner*> tuners) {
  return std::make_unique<TunerSet>(device, std::move(tuners));
}

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
  Status st = tune_steps(plan, *tuner, config, rep);
  rep.tactic_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace streamrt::builder
