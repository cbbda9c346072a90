// `streamrt run model.pte [--backend-option StreamRTBackend:weight_streaming_budget=8GiB ...]`:
// loads a program with load-time backend options, runs its forward method, and reports the
// outputs, the latency and each StreamRT engine's weight-streaming budget in force.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "commands.h"
#include "core/byte_size.h"
#include "core/file_io.h"
#include "core/npy.h"
#include "onnx/tensor_proto.h"
#include "ops/op.h"
#include "program/program_format.h"
#include "streamrt/program.h"

namespace streamrt::cli {
namespace {

Result<LoadBackendOptionsMap> parse_backend_options(const std::vector<std::string>& specs) {
  std::map<std::string, BackendOptions> per_backend;
  for (const std::string& spec : specs) {
    const size_t colon = spec.find(':');
    const size_t eq = colon == std::string::npos ? std::string::npos : spec.find('=', colon + 1);
    if (colon == 0 || eq == std::string::npos || eq == colon + 1)
      return invalid_argument("bad --backend-option '" + spec +
                              "' (expected Backend:key=value, e.g. StreamRTBackend:weight_streaming_budget=8GiB)");
    per_backend[spec.substr(0, colon)].set_option(spec.substr(colon + 1, eq - colon - 1), spec.substr(eq + 1));
  }
  LoadBackendOptionsMap map;
  for (auto& [backend, options] : per_backend) SRT_RETURN_IF_ERROR(map.set_options(backend, std::move(options)));
  return map;
}

// Values in [-1, 1) for float inputs and [0, 8) for integer ones, made as float32 and cast by
// the Cast kernel to the input's dtype.
Result<Tensor> random_input(const program::ValueData& v, uint32_t seed) {
  if (!dims_static(v.dims))
    return invalid_argument("input '" + v.name + "' has dynamic dims " + dims_to_string(v.dims) +
                            "; give it with --input " + v.name + "=file.npy");
  SRT_ASSIGN_OR_RETURN(Tensor f, Tensor::allocate(DataType::kFloat32, v.dims));
  float* p = f.mutable_data_as<float>();
  for (int64_t i = 0; i < f.numel(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    const float u = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24);
    p[i] = is_floating_point(v.dtype) ? 2.f * u - 1.f : static_cast<float>(static_cast<int>(8.f * u));
  }
  ir::Node cast;
  cast.op_type = "Cast";
  cast.opset = 13;
  cast.inputs = {0};
  cast.outputs = {1};
  cast.attrs["to"] = ir::Attribute::make_int(onnx_import::dtype_to_onnx(v.dtype));
  SRT_ASSIGN_OR_RETURN(std::vector<Tensor> out, ops::evaluate_on_host(cast, {f}));
  return out[0];
}

Result<std::vector<EValue>> method_inputs(const program::MethodData& m, const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> given;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("bad --input '" + spec + "' (expected name=file.npy)");
    const std::string file = spec.substr(eq + 1);
    const bool pb = file.size() > 3 && file.compare(file.size() - 3, 3, ".pb") == 0;
    SRT_ASSIGN_OR_RETURN(given[spec.substr(0, eq)], pb ? onnx_import::load_tensor_pb(file) : load_npy(file));
  }
  std::vector<EValue> out;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const program::ValueData& v = m.values[m.inputs[i]];
    if (auto it = given.find(v.name); it != given.end()) {
      out.emplace_back(uint16_bits_as(it->second, v.dtype));  // .npy holds bfloat16 as "<u2"
      given.erase(it);
    } else if (v.tag == EValue::Tag::kTensor) {
      SRT_ASSIGN_OR_RETURN(Tensor t, random_input(v, 1234u + static_cast<uint32_t>(i)));
      out.emplace_back(std::move(t));
    } else {
      return invalid_argument("input '" + v.name + "' is a " + evalue_tag_name(v.tag) + "; only tensors can be given");
    }
  }
  if (!given.empty()) return invalid_argument("--input names '" + given.begin()->first + "', which is not an input");
  return out;
}

void print_output(const std::string& name, const EValue& v) {
  const Tensor* t = v.tensor();
  if (!t) {
    std::printf("  %s: %s\n", name.c_str(), evalue_tag_name(v.tag()));
    return;
  }
  std::printf("  %s: %s %s", name.c_str(), dtype_name(t->dtype()), dims_to_string(t->dims()).c_str());
  auto f = t->to_float_vector();
  if (f.ok() && !f->empty()) {
    double sum = 0, sq = 0;
    for (float x : *f) {
      sum += x;
      sq += double(x) * x;
    }
    std::printf("  sum %.6g  rms %.6g  [0] %.6g", sum, std::sqrt(sq / f->size()), (*f)[0]);
  }
  std::printf("\n");
}

// "engine 0: 400000 B of 512 KiB streamable" for each StreamRT engine, if the program has any.
void print_budgets(const Module& m) {
  BackendOption count{"num_engines", int64_t{0}};
  if (!m.get_backend_option("StreamRTBackend", {&count, 1}).ok()) return;
  for (int64_t i = 0; i < std::get<int64_t>(count.value); ++i) {
    BackendOption o[2] = {{"weight_streaming_budget." + std::to_string(i), std::string()},
                          {"streamable_weights_size." + std::to_string(i), std::string()}};
    if (!m.get_backend_option("StreamRTBackend", o).ok()) return;
    std::printf("  StreamRT engine %lld: weight-streaming budget %s of %s streamable\n", static_cast<long long>(i),
                format_bytes(std::stoull(std::get<std::string>(o[0].value))).c_str(),
                format_bytes(std::stoull(std::get<std::string>(o[1].value))).c_str());
  }
}

}  // namespace

bool is_program_path(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".pte") == 0;
}

int run_program_command(const RunProgramArgs& a) {
  auto options = parse_backend_options(a.backend_options);
  if (!options.ok()) return report_error(options.status());
  if (!a.output_dir.empty())
    if (Status st = make_directories(a.output_dir); !st.ok()) return report_error(st.with_context("--output-dir"));
  Module m(a.path);
  if (Status st = m.load(*options); !st.ok()) return report_error(st);
  const program::MethodData* forward = nullptr;
  for (const auto& md : m.program()->loaded().data.methods)
    if (md.name == "forward") forward = &md;
  if (!forward) return report_error(not_found("program '" + a.path + "' has no method 'forward'"));
  auto inputs = method_inputs(*forward, a.inputs);
  if (!inputs.ok()) return report_error(inputs.status());
  std::vector<double> times;
  Result<std::vector<EValue>> outputs = std::vector<EValue>{};
  for (int i = 0; i < a.warmup + a.iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    outputs = m.forward(*inputs);
    if (!outputs.ok()) return report_error(outputs.status());
    if (i >= a.warmup)
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("program '%s': method forward, %zu instructions\n", a.path.c_str(), forward->instructions.size());
  print_budgets(m);
  std::printf("outputs:\n");
  for (size_t i = 0; i < outputs->size(); ++i) {
    const std::string name = forward->values[forward->outputs[i]].name;
    print_output(name, (*outputs)[i]);
    if (a.output_dir.empty() || !(*outputs)[i].is_tensor()) continue;
    std::string file = name;
    std::replace_if(file.begin(), file.end(), [](char c) { return c == '/' || c == ':'; }, '_');
    if (Status st = save_npy(*(*outputs)[i].tensor(), a.output_dir + "/" + file + ".npy"); !st.ok())
      return report_error(st);
  }
  std::sort(times.begin(), times.end());
  std::printf("latency over %d runs (after %d warmup): min %.3f ms  median %.3f ms  max %.3f ms\n", a.iterations,
              a.warmup, times.front(), times[times.size() / 2], times.back());
  return 0;
}

}  // namespace streamrt::cli
