// streamrt_et_run: an ExecuTorch program (.pte, and its .ptd where the weights are apart) run by
// ExecuTorch's own C++ runtime, executorch::extension::Module, with StreamRTBackend linked in and
// the weight-streaming budget passed as a load-time option: the C++ form of
//   Module m("model.pte"); m.load(options); m.forward(inputs);
// with no Python and no torch in the process (ExecuTorch's Python runtime binds torch's C++ ABI of
// the version it was built with; this one does not).
//
//   streamrt_et_run model.pte [--data model.ptd] [--budget 50%|8GiB|auto|BYTES | --budget-per-engine ...]
//                   --input x.npy [--input ...] [--expect y.npy ... [--atol A] [--rtol R]]  (the first outputs)
//                   [--iterations N] [--save-outputs DIR]
//
// Prints the engines' budgets (StreamRTBackend's get_option), each output's shape and, with
// --expect, its largest difference; --save-outputs writes output i as DIR/output<i>.npy. Exit status: 0 ok, 1 an output differs beyond tolerance,
// 2 bad arguments or a program / input that does not load or run (the message names it).
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/npy.h"
#include "streamrt_executorch.h"
#include "streamrt/tensor.h"

namespace {

namespace etr = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
constexpr char kBackend[] = "StreamRTBackend";

int fail(const std::string& what) {
  std::fprintf(stderr, "error: %s\n", what.c_str());
  return 2;
}

bool scalar_type(streamrt::DataType t, ScalarType* out) {
  using streamrt::DataType;
  switch (t) {
    case DataType::kFloat32: *out = ScalarType::Float; return true;
    case DataType::kFloat16: *out = ScalarType::Half; return true;
    case DataType::kFloat64: *out = ScalarType::Double; return true;
    case DataType::kInt64: *out = ScalarType::Long; return true;
    case DataType::kInt32: *out = ScalarType::Int; return true;
    case DataType::kInt8: *out = ScalarType::Char; return true;
    case DataType::kUInt8: *out = ScalarType::Byte; return true;
    case DataType::kBool: *out = ScalarType::Bool; return true;
    default: return false;
  }
}

// An ExecuTorch tensor as a streamrt Tensor (a copy), for save_npy.
streamrt::Result<streamrt::Tensor> to_streamrt(const ::executorch::aten::Tensor& t) {
  using streamrt::DataType;
  for (DataType d : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt64, DataType::kInt32,
                     DataType::kInt8, DataType::kUInt8, DataType::kBool}) {
    ScalarType st;
    if (scalar_type(d, &st) && st == t.scalar_type())
      return streamrt::Tensor::from_bytes(d, streamrt::Dims(t.sizes().begin(), t.sizes().end()), t.const_data_ptr(),
                                          t.nbytes());
  }
  return streamrt::Status(streamrt::StatusCode::kUnsupported, "an output of a type .npy files do not hold here");
}

// An ExecuTorch tensor's elements as doubles (the types scalar_type() maps).
bool to_doubles(const ::executorch::aten::Tensor& t, std::vector<double>* out) {
  const size_t n = static_cast<size_t>(t.numel());
  out->resize(n);
  auto copy = [&](auto* p) {
    for (size_t i = 0; i < n; ++i) (*out)[i] = static_cast<double>(p[i]);
  };
  switch (t.scalar_type()) {
    case ScalarType::Float: copy(t.const_data_ptr<float>()); return true;
    case ScalarType::Double: copy(t.const_data_ptr<double>()); return true;
    case ScalarType::Half: {
      const auto* h = t.const_data_ptr<::executorch::aten::Half>();
      for (size_t i = 0; i < n; ++i) (*out)[i] = static_cast<double>(static_cast<float>(h[i]));
      return true;
    }
    case ScalarType::Long: copy(t.const_data_ptr<int64_t>()); return true;
    case ScalarType::Int: copy(t.const_data_ptr<int32_t>()); return true;
    case ScalarType::Bool: copy(t.const_data_ptr<bool>()); return true;
    default: return false;
  }
}

std::string get_option(const std::string& key) {
  etr::BackendOption o{};
  std::snprintf(o.key, sizeof(o.key), "%s", key.c_str());
  o.value = std::array<char, etr::kMaxOptionValueLength>{};
  if (etr::get_option(kBackend, etr::Span<etr::BackendOption>(&o, 1)) != etr::Error::Ok) return "?";
  if (const auto* s = std::get_if<std::array<char, etr::kMaxOptionValueLength>>(&o.value)) return s->data();
  if (const auto* i = std::get_if<int>(&o.value)) return std::to_string(*i);
  return "?";
}

struct Args {
  std::string pte, ptd, budget, per_engine, save_dir, method = "forward";
  std::vector<std::string> inputs, expects;
  double atol = 1e-4, rtol = 1e-4;
  int iterations = 1;
};

// Compares output `i` with its expected .npy; prints the largest difference. 0 ok, 1 differs, 2 error.
int check(size_t i, const ::executorch::aten::Tensor& got, const std::string& path, const Args& a) {
  auto want = streamrt::load_npy(path);
  if (!want.ok()) return fail("--expect " + path + ": " + want.status().to_string());
  std::vector<double> g;
  if (!to_doubles(got, &g)) return fail("output " + std::to_string(i) + " has a type this runner does not compare");
  auto values = want->to_double_vector();
  if (!values.ok()) return fail("--expect " + path + ": " + values.status().to_string());
  const std::vector<double>& wd = *values;
  if (g.size() != wd.size())
    return fail("output " + std::to_string(i) + " has " + std::to_string(g.size()) + " elements, " + path + " " +
                std::to_string(wd.size()));
  double worst = 0, worst_excess = -1;
  for (size_t k = 0; k < g.size(); ++k) {
    const double d = std::fabs(g[k] - wd[k]);
    worst = std::max(worst, d);
    worst_excess = std::max(worst_excess, d - (a.atol + a.rtol * std::fabs(wd[k])));
    if (std::isnan(g[k]) != std::isnan(wd[k])) worst_excess = 1;
  }
  std::printf("output %zu: max abs diff %.3g against %s (atol %g, rtol %g): %s\n", i, worst, path.c_str(), a.atol,
              a.rtol, worst_excess > 0 ? "DIFFERS" : "ok");
  return worst_excess > 0 ? 1 : 0;
}

int run(const Args& a) {
  // A reference into libstreamrt_executorch.so keeps it linked (its load registers StreamRTBackend;
  // a linker dropping libraries nothing calls into would leave the backend unregistered).
  (void)streamrt::et::registered_backend();
  std::vector<streamrt::Tensor> host;
  std::vector<::executorch::extension::TensorPtr> tensors;
  for (const std::string& path : a.inputs) {
    auto t = streamrt::load_npy(path);
    if (!t.ok()) return fail("--input " + path + ": " + t.status().to_string());
    ScalarType st;
    if (!scalar_type(t->dtype(), &st)) return fail("--input " + path + ": dtype " + dtype_name(t->dtype()) + " is not supported");
    host.push_back(std::move(t).value());
    std::vector<::executorch::aten::SizesType> sizes(host.back().dims().begin(), host.back().dims().end());
    tensors.push_back(::executorch::extension::from_blob(host.back().mutable_data(), sizes, st));
  }
  etr::BackendOptions<2> opts;
  if (!a.budget.empty() && opts.set_option("weight_streaming_budget", a.budget.c_str()) != etr::Error::Ok)
    return fail("--budget " + a.budget + ": not an option value");
  if (!a.per_engine.empty() &&
      opts.set_option("weight_streaming_budget_per_engine", a.per_engine.c_str()) != etr::Error::Ok)
    return fail("--budget-per-engine " + a.per_engine + ": not an option value");
  etr::LoadBackendOptionsMap options;
  if (options.set_options(kBackend, opts.view()) != etr::Error::Ok) return fail("load-time options refused");

  std::unique_ptr<Module> m = a.ptd.empty() ? std::make_unique<Module>(a.pte, Module::LoadMode::Mmap)
                                            : std::make_unique<Module>(a.pte, a.ptd, Module::LoadMode::Mmap);
  if (m->load(options) != etr::Error::Ok) return fail(a.pte + ": ExecuTorch could not load the program");
  if (m->load_method(a.method) != etr::Error::Ok)
    return fail(a.pte + ": method '" + a.method + "' did not load (StreamRTBackend's message is in the log above)");
  const std::string engines = get_option("num_engines");
  std::printf("%s: %s StreamRT engine(s); budget in force %s bytes (streamable %s)\n", a.pte.c_str(), engines.c_str(),
              get_option("weight_streaming_budget").c_str(), get_option("streamable_weights_size").c_str());
  const int count = engines == "?" ? 0 : std::atoi(engines.c_str());
  for (int e = 0; e < count; ++e)
    std::printf("  engine %d: budget %s of %s bytes\n", e, get_option("weight_streaming_budget." + std::to_string(e)).c_str(),
                get_option("streamable_weights_size." + std::to_string(e)).c_str());

  std::vector<etr::EValue> inputs;
  for (auto& t : tensors) inputs.emplace_back(*t);
  std::vector<double> ms;
  std::vector<etr::EValue> out;
  for (int it = 0; it < std::max(1, a.iterations); ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = m->execute(a.method, inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!r.ok())
      return fail(a.pte + ": " + a.method + " failed with ExecuTorch error " + std::to_string(static_cast<int>(r.error())));
    out = std::move(r).get();
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%s over %zu run(s): median %.3f ms\n", a.method.c_str(), ms.size(), ms[ms.size() / 2]);
  if (a.expects.size() > out.size())
    return fail(std::to_string(a.expects.size()) + " --expect files for " + std::to_string(out.size()) + " outputs");
  int status = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].isTensor()) continue;
    const auto& t = out[i].toTensor();
    std::string dims;
    for (auto s : t.sizes()) dims += (dims.empty() ? "" : "x") + std::to_string(s);
    std::printf("output %zu: %s\n", i, dims.c_str());
    if (!a.save_dir.empty()) {
      const std::string path = a.save_dir + "/output" + std::to_string(i) + ".npy";
      auto host = to_streamrt(t);
      const streamrt::Status st = host.ok() ? streamrt::save_npy(*host, path) : host.status();
      if (!st.ok()) return fail("--save-outputs " + path + ": " + st.to_string());
    }
    if (i < a.expects.size()) status = std::max(status, check(i, t, a.expects[i], a));
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"Run an ExecuTorch program with StreamRT delegates through ExecuTorch's C++ runtime"};
  app.add_option("program", a.pte, ".pte file")->required()->check(CLI::ExistingFile);
  app.add_option("--data", a.ptd, ".ptd with the program's named data")->check(CLI::ExistingFile);
  auto* b = app.add_option("--budget", a.budget, "load-time weight_streaming_budget: auto | 50% | 8GiB | bytes");
  app.add_option("--budget-per-engine", a.per_engine, "load-time weight_streaming_budget_per_engine")->excludes(b);
  app.add_option("--method", a.method, "method to run");
  app.add_option("--input", a.inputs, "an input as .npy, in the method's order")->check(CLI::ExistingFile);
  app.add_option("--expect", a.expects, "expected outputs as .npy, in order (the first ones)")->check(CLI::ExistingFile);
  app.add_option("--atol", a.atol, "absolute tolerance")->check(CLI::NonNegativeNumber);
  app.add_option("--rtol", a.rtol, "relative tolerance")->check(CLI::NonNegativeNumber);
  app.add_option("--save-outputs", a.save_dir, "write output i as DIR/output<i>.npy")->check(CLI::ExistingDirectory);
  app.add_option("--iterations", a.iterations, "runs (the median is printed)")->check(CLI::Range(1, 1000000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return run(a);
}
