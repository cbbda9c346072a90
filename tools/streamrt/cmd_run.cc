#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "commands.h"
#include "core/byte_size.h"
#include "core/file_io.h"
#include "core/float16.h"
#include "core/npy.h"
#include "core/tensor.h"
#include "onnx/tensor_proto.h"
#include "streamrt/runtime.h"

namespace streamrt::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<Tensor> load_input_file(const std::string& path) {
  if (ends_with(path, ".pb")) return onnx_import::load_tensor_pb(path);
  return load_npy(path);
}

// Random values that keep models numerically sane: floats in [-1, 1), ints in [0, 8).
Result<Tensor> random_tensor(DataType dtype, const Dims& dims, std::mt19937& rng) {
  SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, dims));
  std::uniform_real_distribution<float> uf(-1.f, 1.f);
  std::uniform_int_distribution<int> ui(0, 7);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DataType::kFloat32: t.mutable_data_as<float>()[i] = uf(rng); break;
      case DataType::kFloat16: t.mutable_data_as<uint16_t>()[i] = Half::from_float(uf(rng)); break;
      case DataType::kBFloat16: t.mutable_data_as<uint16_t>()[i] = BFloat16::from_float(uf(rng)); break;
      case DataType::kInt64: t.mutable_data_as<int64_t>()[i] = ui(rng); break;
      case DataType::kInt32: t.mutable_data_as<int32_t>()[i] = ui(rng); break;
      case DataType::kInt8: t.mutable_data_as<int8_t>()[i] = static_cast<int8_t>(ui(rng)); break;
      case DataType::kUInt8: t.mutable_data_as<uint8_t>()[i] = static_cast<uint8_t>(ui(rng)); break;
      case DataType::kBool: t.mutable_data_as<uint8_t>()[i] = ui(rng) & 1; break;
      case DataType::kFloat64: t.mutable_data_as<double>()[i] = uf(rng); break;
      case DataType::kInt16: t.mutable_data_as<int16_t>()[i] = static_cast<int16_t>(ui(rng)); break;
      case DataType::kUInt16: t.mutable_data_as<uint16_t>()[i] = static_cast<uint16_t>(ui(rng)); break;
      case DataType::kUInt32: t.mutable_data_as<uint32_t>()[i] = static_cast<uint32_t>(ui(rng)); break;
      case DataType::kUInt64: t.mutable_data_as<uint64_t>()[i] = static_cast<uint64_t>(ui(rng)); break;
      default: break;
    }
  }
  return t;
}

void print_summary(const std::string& name, const Tensor& t) {
  std::printf("  %s: %s %s", name.c_str(), dtype_name(t.dtype()), dims_to_string(t.dims()).c_str());
  auto v = t.to_float_vector();
  if (v.ok() && !v->empty()) {
    double sum = 0, mn = INFINITY, mx = -INFINITY;
    for (float f : *v) {
      sum += f;
      mn = std::min<double>(mn, f);
      mx = std::max<double>(mx, f);
    }
    std::printf("  mean %.6g  min %.6g  max %.6g  first [", sum / v->size(), mn, mx);
    for (size_t i = 0; i < std::min<size_t>(4, v->size()); ++i) std::printf(i ? ", %.5g" : "%.5g", (*v)[i]);
    std::printf("]");
  }
  std::printf("\n");
}

// --budget: parsed by the one budget parser, resolved against the engine, applied before any
// context exists; the applied budget and streamable size are printed either way.
Status apply_budget_option(Engine& engine, const std::string& text) {
  uint64_t streamable = engine.streamable_weights_size();
  if (!text.empty()) {
    SRT_ASSIGN_OR_RETURN(BudgetSpec spec, parse_budget(text));
    if (streamable == 0) {
      std::printf("note: engine '%s' has no streamable weights (built without --weight-streaming); --budget %s "
                  "ignored\n", engine.name().c_str(), text.c_str());
      return ok_status();
    }
    uint64_t bytes = resolve_budget(spec, streamable, engine.weight_streaming_automatic_budget());
    SRT_RETURN_IF_ERROR(engine.set_weight_streaming_budget(bytes));
  }
  if (streamable > 0)
    std::printf("weight streaming: budget %s of %s streamable (%.1f%%), scratch %s per context\n",
                format_bytes(engine.weight_streaming_budget()).c_str(), format_bytes(streamable).c_str(),
                100.0 * engine.weight_streaming_budget() / streamable,
                format_bytes(engine.weight_streaming_scratch_size()).c_str());
  return ok_status();
}

void print_streaming_stats(const std::vector<StreamingStats>& stats) {
  std::printf("weight streaming per run:\n");
  for (size_t i = 0; i < stats.size(); ++i) {
    const StreamingStats& st = stats[i];
    std::printf("  run %zu: streamed %s in %llu copies, copy %.3f ms, stalled %.3f ms, overlap %.0f%%\n", i,
                format_bytes(st.bytes_streamed).c_str(), static_cast<unsigned long long>(st.weights_streamed),
                st.copy_ms, st.stall_ms, 100.0 * st.overlap());
  }
}

}  // namespace

Command add_run_command(CLI::App& app) {
  struct State {
    std::string model, output_dir;
    std::vector<std::string> inputs;
    int iterations = 10, warmup = 2;
    bool cuda_graph = false;
    std::string budget;
    BuildOptions opts;
    DiagnosticOptions diagnostics;
    std::vector<std::string> backend_options;  // programs (.pte) only
  };
  auto s = std::make_shared<State>();
  app.add_option("model", s->model, "plan file, or ONNX model (built in memory first)")->required();
  app.add_option("--input", s->inputs, "input tensor: name=file.npy|file.pb (random when omitted)");
  app.add_option("--output-dir", s->output_dir, "write each output as <dir>/<name>.npy");
  app.add_option("--iterations", s->iterations, "timed runs")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", s->warmup, "untimed runs before timing")->check(CLI::Range(0, 1000000));
  app.add_flag("--cuda-graph", s->cuda_graph, "CUDA: capture the run once, replay it while shapes are unchanged");
  app.add_option("--budget", s->budget,
                 "weight-streaming budget (device bytes for streamable weights): 8GiB | 512MiB | <bytes> | 50% | auto");
  add_build_options(app, s->opts);
  add_diagnostic_options(app, s->diagnostics);
  app.add_option("--backend-option", s->backend_options, "program (.pte): a load-time backend option, Backend:key=value");
  return [s]() -> int {
    if (is_program_path(s->model))
      return run_program_command({s->model, s->inputs, s->backend_options, s->output_dir, s->iterations, s->warmup});
    // Before the build and the runs, so that a folder that cannot be made fails at once.
    if (!s->output_dir.empty())
      if (Status st = make_directories(s->output_dir); !st.ok()) return report_error(st.with_context("--output-dir"));
    // Inputs before the build, so that a bad file fails at once.
    std::map<std::string, Tensor> given;
    for (const auto& spec : s->inputs) {
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        return report_error(invalid_argument("bad --input '" + spec + "' (expected name=file.npy)"));
      auto t = load_input_file(spec.substr(eq + 1));
      if (!t.ok()) return report_error(t.status());
      given[spec.substr(0, eq)] = std::move(t).value();
    }
    auto config = make_builder_config(s->opts);
    if (!config.ok()) return report_error(config.status());
    // An ONNX model built here takes the dims of the inputs it is given where neither --shapes nor
    // --profile says otherwise (as `run model.onnx --input x=x.npy` reads).
    std::vector<std::string> shaped_by_input;
    if (ends_with(s->model, ".onnx"))
      for (const auto& [name, t] : given)
        if (!config->shapes.count(name) && !config->profiles.count(name)) {
          config->shapes[name] = t.dims();
          shaped_by_input.push_back(name);
        }
    auto ro = make_runtime_options(s->diagnostics, config->device);
    if (!ro.ok()) return report_error(ro.status());
    auto rt = Runtime::create(*ro);
    if (!rt.ok()) return report_error(rt.status());
    Result<std::shared_ptr<Engine>> engine = not_found("no engine");
    if (ends_with(s->model, ".onnx")) {
      auto bytes = build_plan_from_onnx(s->model, *config);
      for (const std::string& name : shaped_by_input)  // the builder names the shape it was given
        if (!bytes.ok() && bytes.status().message().find("names '" + name + "', which is not") != std::string::npos)
          return report_error(invalid_argument("--input names '" + name + "', which is not an input of the model"));
      if (!bytes.ok()) return report_error(bytes.status());
      engine = (*rt)->load_engine_bytes(std::move(bytes).value());
    } else {
      engine = (*rt)->load_engine(s->model);
    }
    if (!engine.ok()) return report_error(engine.status());
    if (Status st = apply_budget_option(**engine, s->budget); !st.ok()) return report_error(st);
    auto ctx = (*engine)->create_execution_context();
    if (!ctx.ok()) return report_error(ctx.status());

    if (s->cuda_graph)
      if (Status st = (*ctx)->set_cuda_graph(true); !st.ok()) return report_error(st);
    std::mt19937 rng(1234);
    std::map<std::string, Tensor> tensors;      // host copies
    std::map<std::string, DeviceBuffer> buffers;  // what the engine reads and writes
    for (const TensorDesc& d : (*engine)->io_tensors()) {
      Tensor t;
      if (d.is_input) {
        if (auto it = given.find(d.name); it != given.end()) {
          t = uint16_bits_as(it->second, d.dtype);  // .npy holds bfloat16 as "<u2"
          given.erase(it);
          if (t.dtype() != d.dtype)
            return report_error(invalid_argument("input '" + d.name + "' is " + dtype_name(d.dtype) +
                                                 ", the file holds " + dtype_name(t.dtype())));
        } else {
          auto r = random_tensor(d.dtype, d.opt, rng);
          if (!r.ok()) return report_error(r.status());
          t = std::move(r).value();
        }
        if (Status st = (*ctx)->set_input_shape(d.name, t.dims()); !st.ok()) return report_error(st);
      } else {
        auto dims = (*ctx)->tensor_shape(d.name);  // exact when computable before running
        if (!dims.ok() && d.max.empty()) return report_error(dims.status());
        auto r = Tensor::allocate(d.dtype, dims.ok() ? *dims : d.max);
        if (!r.ok()) return report_error(r.status().with_context("output '" + d.name + "'"));
        t = std::move(r).value();
      }
      // A KV cache stored with a capacity (build --kv-cache-in-place) takes a buffer of that room.
      const uint64_t bytes = d.storage_bytes(t.dims());
      if (bytes == UINT64_MAX)
        return report_error(invalid_argument("'" + d.name + "' of dims " + dims_to_string(t.dims()) +
                                             " does not fit its capacity " + std::to_string(d.seq_capacity)));
      auto buf = DeviceBuffer::allocate((*engine)->device(), bytes);
      if (!buf.ok()) return report_error(buf.status());
      Status st = ok_status();
      if (d.is_input) {
        std::vector<uint8_t> stored(bytes, 0);
        st = pack_to_storage(d, t.dims(), t.data(), stored.data());
        if (st.ok()) st = buf->copy_from_host(stored.data(), bytes);
      }
      if (st.ok()) st = (*ctx)->set_tensor_address(d.name, buf->data(), bytes);
      if (!st.ok()) return report_error(st);
      tensors[d.name] = std::move(t);
      buffers[d.name] = std::move(buf).value();
    }
    if (!given.empty())
      return report_error(invalid_argument("--input names '" + given.begin()->first + "', which is not an input"));

    const bool streaming = (*engine)->streamable_weights_size() > 0;
    (*ctx)->set_streaming_profiling(streaming);
    std::vector<double> times;
    std::vector<StreamingStats> stats;
    for (int i = 0; i < s->warmup + s->iterations; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      if (Status st = (*ctx)->execute(); !st.ok()) return report_error(st);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (i < s->warmup) continue;
      times.push_back(ms);
      auto st = (*ctx)->last_run_stats();
      if (!st.ok()) return report_error(st.status());
      stats.push_back(*st);
    }
    std::sort(times.begin(), times.end());
    std::printf("engine '%s' on %s: %zu steps, %.2f MiB weights, %.2f MiB activations\n",
                (*engine)->name().c_str(), device_type_name((*engine)->device()), (*engine)->num_steps(),
                (*engine)->weights_size() / 1048576.0, (*engine)->device_memory_size() / 1048576.0);
    std::printf("outputs:\n");
    for (const TensorDesc& d : (*engine)->io_tensors()) {
      if (d.is_input) continue;
      auto dims = (*ctx)->tensor_shape(d.name);
      if (!dims.ok()) return report_error(dims.status());
      auto host = Tensor::allocate(d.dtype, *dims);
      if (!host.ok()) return report_error(host.status());
      Tensor out = std::move(host).value();
      std::vector<uint8_t> stored(d.storage_bytes(*dims));
      Status copied = buffers[d.name].copy_to_host(stored.data(), stored.size());
      if (copied.ok()) copied = unpack_from_storage(d, *dims, stored.data(), out.mutable_data());
      if (!copied.ok()) return report_error(copied);
      print_summary(d.name, out);
      if (!s->output_dir.empty()) {
        std::string safe = d.name;
        std::replace_if(safe.begin(), safe.end(), [](char c) { return c == '/' || c == ':'; }, '_');
        if (Status st = save_npy(out, s->output_dir + "/" + safe + ".npy"); !st.ok()) return report_error(st);
      }
    }
    std::printf("latency over %d runs (after %d warmup): min %.3f ms  median %.3f ms  max %.3f ms\n",
                s->iterations, s->warmup, times.front(), times[times.size() / 2], times.back());
    if (streaming) print_streaming_stats(stats);
    return 0;
  };
}

}  // namespace streamrt::cli
