#include "onnx_test_case.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/tensor.h"
#include "onnx/importer.h"
#include "onnx/tensor_proto.h"
#include "ops/op.h"
#include "streamrt/runtime.h"

namespace fs = std::filesystem;

namespace streamrt::cli {
namespace {

// One data set; where the model's value is a sequence / optional, seq_* holds it (and the
// tensor at that position is empty).
struct DataSet {
  std::vector<Tensor> inputs, outputs;
  std::vector<SequenceValue> seq_inputs, seq_outputs;
};

// input_0.pb, input_1.pb ... in numeric order; `types` says which are sequences / optionals.
Status load_numbered(const fs::path& dir, const std::string& prefix, const std::vector<ir::SeqType>& types,
                     std::vector<Tensor>& tensors, std::vector<SequenceValue>& seqs) {
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    std::error_code ec;
    if (!fs::exists(p, ec)) break;
    seqs.emplace_back();
    if (static_cast<size_t>(i) < types.size() && !types[i].is_tensor()) {
      SRT_ASSIGN_OR_RETURN(seqs.back(), onnx_import::load_sequence_pb(p.string(), types[i].kind, types[i].elem_dtype));
      tensors.emplace_back();
      continue;
    }
    SRT_ASSIGN_OR_RETURN(Tensor t, onnx_import::load_tensor_pb(p.string()));
    tensors.push_back(std::move(t));
  }
  return ok_status();
}

Result<std::vector<DataSet>> load_data_sets(const fs::path& dir, const std::vector<ir::SeqType>& in_types,
                                            const std::vector<ir::SeqType>& out_types) {
  std::vector<fs::path> sets;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->is_directory(ec) && it->path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(it->path());
  if (ec) return io_error("cannot list '" + dir.string() + "': " + ec.message());
  std::sort(sets.begin(), sets.end());
  std::vector<DataSet> out;
  for (const auto& s : sets) {
    DataSet ds;
    SRT_RETURN_IF_ERROR(load_numbered(s, "input_", in_types, ds.inputs, ds.seq_inputs));
    SRT_RETURN_IF_ERROR(load_numbered(s, "output_", out_types, ds.outputs, ds.seq_outputs));
    out.push_back(std::move(ds));
  }
  if (out.empty()) return not_found("no test_data_set_* in " + dir.string());
  return out;
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

// Empty string when equal within tolerance, else a description of the worst mismatch.
std::string compare(const Tensor& got, const Tensor& want, const CompareTolerance& tol) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (got.dims() != want.dims())
    return "dims " + dims_to_string(got.dims()) + ", expected " + dims_to_string(want.dims());
  if (!is_floating_point(got.dtype())) {
    if (std::memcmp(got.data(), want.data(), got.nbytes()) != 0) {
      auto g = got.to_int64_vector().value(), w = want.to_int64_vector().value();
      for (size_t i = 0; i < g.size(); ++i)
        if (g[i] != w[i])
          return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
    }
    return "";
  }
  auto g = got.to_double_vector().value(), w = want.to_double_vector().value();
  // A bfloat16 output holds 8 significant bits: two correct roundings of one value (round to
  // nearest even here, truncation in the ONNX test data of test_cast_FLOAT_to_BFLOAT16) differ
  // by up to one ulp, 2^-7 relative, more than the default rtol. Never tighter than the type.
  const double rtol = got.dtype() == DataType::kBFloat16 ? std::max(tol.rtol, 1.0 / 128) : tol.rtol;
  double max_abs = 0, max_rel = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (std::isinf(w[i]) && g[i] == w[i]) continue;
    double d = std::fabs(g[i] - w[i]);
    if (std::isnan(d)) d = INFINITY;
    max_abs = std::max(max_abs, d);
    if (w[i] != 0) max_rel = std::max(max_rel, d / std::fabs(w[i]));
    if (!(d <= tol.atol + rtol * std::fabs(w[i]))) {
      if (bad++ == 0) first_bad = i;
    }
  }
  if (!bad) return "";
  return std::to_string(bad) + " of " + std::to_string(g.size()) + " elements differ; max abs err " + fmt(max_abs) +
         ", max rel err " + fmt(max_rel) + "; first at " + std::to_string(first_bad) + ": " + fmt(g[first_bad]) +
         " vs " + fmt(w[first_bad]);
}

// The model's random draws (ops whose schema says nondeterministic: RandomUniform, Bernoulli, ...).
struct Randomness {
  bool any = false, all_seeded = true;
};
Randomness randomness_of(const ir::Graph& g) {
  Randomness r;
  for (const ir::Node& n : g.nodes)
    if (const ops::OpSchema* s = ops::schema_of(n); s && s->nondeterministic) {
      r.any = true;
      r.all_seeded = r.all_seeded && n.has_attr("seed");
    }
  return r;
}

// An output computed from random draws: no generator reproduces the reference's (numpy's), so
// only what any draw satisfies is checked: dtype, dims, no NaN where the reference has none,
// and values in {0, 1} where the reference's all are (Bernoulli and what is computed from it).
// Empty when it holds; `binary` tells whether the values were checked too.
std::string compare_random(const Tensor& got, const Tensor& want, bool& binary) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (got.dims() != want.dims())
    return "dims " + dims_to_string(got.dims()) + ", expected " + dims_to_string(want.dims());
  auto g = got.to_double_vector(), w = want.to_double_vector();
  if (!g.ok() || !w.ok()) return "";
  binary = std::all_of(w->begin(), w->end(), [](double v) { return v == 0 || v == 1; });
  for (size_t i = 0; i < g->size(); ++i) {
    if (std::isnan((*g)[i]) && !std::isnan((*w)[i])) return "element " + std::to_string(i) + " is NaN";
    if (binary && (*g)[i] != 0 && (*g)[i] != 1)
      return "element " + std::to_string(i) + " is " + fmt((*g)[i]) + ", not 0 or 1 as every reference value";
  }
  return "";
}

// Builds the model with `config` and runs every data set on a runtime with `ro` (its device set here);
// returns each set's outputs on the host (in DataSet::outputs, and seq_outputs where an output is a
// sequence / optional).
Result<std::vector<DataSet>> run_on_device(const std::string& model, const BuilderConfig& config, RuntimeOptions ro,
                                           std::vector<DataSet>& sets, const std::vector<std::string>& in_names,
                                           const std::vector<std::string>& out_names) {
  const DeviceType device = config.device;
  SRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, build_plan_from_onnx(model, config));
  ro.device = device;
  SRT_ASSIGN_OR_RETURN(auto rt, Runtime::create(ro));
  SRT_ASSIGN_OR_RETURN(auto engine, rt->load_engine_bytes(std::move(bytes)));
  SRT_ASSIGN_OR_RETURN(auto ctx, engine->create_execution_context());
  std::map<std::string, TensorDesc> descs;
  for (const auto& d : engine->io_tensors()) descs[d.name] = d;
  std::vector<DataSet> results;
  for (DataSet& ds : sets) {
    std::vector<DeviceBuffer> in_bufs;
    for (size_t i = 0; i < in_names.size(); ++i) {
      if (descs[in_names[i]].kind != ValueKind::kTensor) {
        SRT_RETURN_IF_ERROR(ctx->set_sequence_input(in_names[i], ds.seq_inputs[i]));
        continue;
      }
      Tensor& t = ds.inputs[i];
      SRT_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(device, t.nbytes()));
      SRT_RETURN_IF_ERROR(buf.copy_from_host(t.data(), t.nbytes()));
      SRT_RETURN_IF_ERROR(ctx->set_input_shape(in_names[i], t.dims()));
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(in_names[i], buf.data(), t.nbytes()));
      in_bufs.push_back(std::move(buf));
    }
    std::vector<DeviceBuffer> out_bufs(out_names.size());
    for (size_t o = 0; o < out_names.size(); ++o) {
      const TensorDesc& d = descs[out_names[o]];
      if (d.kind != ValueKind::kTensor) continue;  // the context holds it
      auto dims = ctx->tensor_shape(out_names[o]);  // exact when computable before running
      if (!dims.ok() && d.max.empty()) return dims.status();
      SRT_ASSIGN_OR_RETURN(int64_t numel, checked_numel(dims.ok() ? *dims : d.max));
      const size_t bytes = static_cast<size_t>(numel) * dtype_size(d.dtype);
      SRT_ASSIGN_OR_RETURN(out_bufs[o], DeviceBuffer::allocate(device, bytes));
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(out_names[o], out_bufs[o].data(), bytes));
    }
    SRT_RETURN_IF_ERROR(ctx->execute());
    DataSet outs;
    for (size_t o = 0; o < out_names.size(); ++o) {
      outs.seq_outputs.emplace_back();
      if (descs[out_names[o]].kind != ValueKind::kTensor) {
        SRT_ASSIGN_OR_RETURN(outs.seq_outputs.back(), ctx->sequence_output(out_names[o]));
        outs.outputs.emplace_back();
        continue;
      }
      SRT_ASSIGN_OR_RETURN(Dims dims, ctx->tensor_shape(out_names[o]));
      SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(descs[out_names[o]].dtype, dims));
      SRT_RETURN_IF_ERROR(out_bufs[o].copy_to_host(t.mutable_data(), t.nbytes()));
      outs.outputs.push_back(std::move(t));
    }
    results.push_back(std::move(outs));
  }
  return results;
}

// compare() for sequence / optional values, tensor by tensor.
std::string compare_seq(const SequenceValue& got, const SequenceValue& want, const CompareTolerance& tol) {
  if (got.has_value != want.has_value)
    return std::string(got.has_value ? "holds a value" : "is empty") + ", expected " + (want.has_value ? "a value" : "none");
  if (got.tensors.size() != want.tensors.size())
    return std::to_string(got.tensors.size()) + " tensors, expected " + std::to_string(want.tensors.size());
  for (size_t i = 0; i < got.tensors.size(); ++i) {
    const HostTensor& g = got.tensors[i];
    const HostTensor& w = want.tensors[i];
    Tensor gt = Tensor::view(g.dtype, g.dims, g.data.data(), nullptr);
    Tensor wt = Tensor::view(w.dtype, w.dims, w.data.data(), nullptr);
    if (std::string diff = compare(gt, wt, tol); !diff.empty()) return "tensor " + std::to_string(i) + ": " + diff;
  }
  return "";
}

CaseResult fail(const Status& st) {
  CaseOutcome o = st.code() == StatusCode::kUnsupported ? CaseOutcome::kSkip : CaseOutcome::kFail;
  return {o, st.to_string()};
}

}  // namespace

std::vector<std::string> find_cases(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::exists(fs::path(path) / "model.onnx", ec)) return {path};
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (std::error_code file_ec; it->is_regular_file(file_ec) && it->path().filename() == "model.onnx")
      out.push_back(it->path().parent_path().string());
  std::sort(out.begin(), out.end());
  return out;
}

CaseResult run_case(const std::string& dir, const CaseSetup& setup, const CompareTolerance& tol) {
  const bool against_cpu = setup.against_cpu;
  const std::string model = (fs::path(dir) / "model.onnx").string();
  onnx_import::ImportOptions iopt;
  iopt.check_supported = false;
  auto graph = onnx_import::import_onnx_file(model, iopt);
  if (!graph.ok()) return fail(graph.status());
  std::vector<std::string> in_names, out_names;
  std::vector<ir::SeqType> in_types, out_types;
  for (auto id : graph->inputs) {
    in_names.push_back(graph->value(id).name);
    in_types.push_back(graph->value(id).seq);
  }
  for (auto id : graph->outputs) {
    out_names.push_back(graph->value(id).name);
    out_types.push_back(graph->value(id).seq);
  }
  auto sets = load_data_sets(dir, in_types, out_types);
  if (!sets.ok()) return fail(sets.status());
  // The test data hold bfloat16 tensors as uint16 (numpy has no bfloat16).
  for (DataSet& ds : *sets) {
    for (size_t i = 0; i < ds.inputs.size() && i < graph->inputs.size(); ++i)
      if (!ds.inputs[i].empty()) ds.inputs[i] = uint16_bits_as(ds.inputs[i], graph->value(graph->inputs[i]).dtype);
    for (size_t o = 0; o < ds.outputs.size() && o < graph->outputs.size(); ++o)
      if (!ds.outputs[o].empty()) ds.outputs[o] = uint16_bits_as(ds.outputs[o], graph->value(graph->outputs[o]).dtype);
  }

  // A profile covering every data set's input shapes.
  BuilderConfig config;
  config.device = setup.device;
  config.float_precision = setup.precision;
  config.passes = setup.passes;
  for (size_t i = 0; i < in_names.size(); ++i) {
    ShapeProfile p;
    for (const auto& ds : *sets) {
      if (i >= ds.inputs.size()) return {CaseOutcome::kFail, "data set lacks input " + std::to_string(i)};
      if (!in_types[i].is_tensor()) break;  // a sequence / optional: the builder's own bound
      const Dims& d = ds.inputs[i].dims();
      if (p.min.empty() && p.max.empty()) p.min = p.max = d;
      if (d.size() != p.min.size()) return {CaseOutcome::kFail, "data sets disagree on the rank of input " + in_names[i]};
      for (size_t k = 0; k < d.size(); ++k) {
        p.min[k] = std::min(p.min[k], d[k]);
        p.max[k] = std::max(p.max[k], d[k]);
      }
    }
    p.opt = p.max;
    if (in_types[i].is_tensor()) config.profiles[in_names[i]] = p;
  }
  auto got = run_on_device(model, config, setup.runtime, *sets, in_names, out_names);
  if (!got.ok()) return fail(got.status());
  std::vector<DataSet> want;
  if (against_cpu) {  // the reference is the CPU backend with the same build options
    BuilderConfig cpu_config = config;
    cpu_config.device = DeviceType::kCpu;
    auto ref = run_on_device(model, cpu_config, setup.runtime, *sets, in_names, out_names);
    if (!ref.ok()) return fail(ref.status().with_context("CPU reference"));
    want = std::move(ref).value();
  } else {
    want = *sets;
  }
  // Random draws are compared value by value only with the CPU's, and only when seeded (the
  // determinism contract, ops/random_util.h); against numpy's draws, what any draw satisfies.
  const Randomness random = randomness_of(*graph);
  const bool loose = random.any && !(against_cpu && random.all_seeded);
  bool all_binary = true;
  for (size_t s = 0; s < sets->size(); ++s) {
    if (want[s].outputs.size() != out_names.size())
      return {CaseOutcome::kFail, "data set has " + std::to_string(want[s].outputs.size()) + " outputs, model has " +
                                      std::to_string(out_names.size())};
    for (size_t o = 0; o < out_names.size(); ++o) {
      bool binary = false;
      const Tensor& g = (*got)[s].outputs[o];
      const Tensor& w = want[s].outputs[o];
      std::string diff = !out_types[o].is_tensor() ? compare_seq((*got)[s].seq_outputs[o], want[s].seq_outputs[o], tol)
                         : loose                   ? compare_random(g, w, binary)
                                                   : compare(g, w, tol);
      all_binary = all_binary && binary;
      if (!diff.empty())
        return {CaseOutcome::kFail, "data set " + std::to_string(s) + " output '" + out_names[o] + "': " + diff};
    }
  }
  if (loose)
    return {CaseOutcome::kPass, std::string("random outputs: shape and dtype checked") +
                                    (all_binary ? ", values in {0, 1}" : "")};
  return {CaseOutcome::kPass, random.any ? "random outputs, seeded: values compared with the CPU's" : ""};
}

}  // namespace streamrt::cli
