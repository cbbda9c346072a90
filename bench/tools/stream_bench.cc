// streamrt_stream_bench: one plan loaded once, latency swept over weight-streaming budgets and
// sequence lengths (bench/streaming/run.sh drives it on the GPU machine). JSON lines out:
//   {"impl":"streamrt","seq":1,"budget_pct":10,"budget_bytes":...,"streamable_bytes":...,
//    "median_ms":...,"min_ms":...,"bytes_streamed":...,"stall_ms":...,"copy_ms":...}
// Usage: streamrt_stream_bench PLAN --input NAME --seqs 1,2048 --budgets 0,10,...,100
//                              [--iters 5] [--warmup 1] [--settle 5] [--json OUT] [--cuda-graph]
// The first point gets --settle more untimed runs: right after the load (gigabytes pinned and copied,
// the plan's pages dropped) its median ran 1.6 % above its min on an H100, the others' 0.2 %.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include "core/byte_size.h"
#include "core/environment.h"
#include "core/float16.h"
#include "core/tensor.h"
#include "streamrt/runtime.h"

using namespace streamrt;

namespace {

struct Point {
  int64_t seq;
  int pct;
};

// Random input of `desc`'s profile dims with the sequence (dim 1) set to `seq`.
Result<Tensor> make_input(const TensorDesc& d, int64_t seq) {
  Dims dims = d.max.empty() ? d.dims : d.max;
  if (dims.size() >= 2) dims[1] = seq;
  SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(d.dtype, dims));
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (d.dtype == DataType::kFloat16) t.mutable_data_as<uint16_t>()[i] = Half::from_float(n(rng));
    else if (d.dtype == DataType::kBFloat16) t.mutable_data_as<uint16_t>()[i] = BFloat16::from_float(n(rng));
    else if (d.dtype == DataType::kFloat32) t.mutable_data_as<float>()[i] = n(rng);
  }
  return t;
}

Result<std::string> run_point(Engine& e, const std::string& input, const Point& p, int iters, int warmup,
                              bool graph) {
  const uint64_t streamable = e.streamable_weights_size();
  BudgetSpec spec{BudgetSpec::Kind::kPercent, 0, static_cast<double>(p.pct)};
  const uint64_t budget = resolve_budget(spec, streamable, 0);
  SRT_RETURN_IF_ERROR(e.set_weight_streaming_budget(budget));
  SRT_ASSIGN_OR_RETURN(auto ctx, e.create_execution_context());
  std::vector<DeviceBuffer> bufs;
  for (const TensorDesc& d : e.io_tensors()) {
    if (!d.is_input) continue;
    if (d.name != input) return invalid_argument("unexpected input '" + d.name + "'");
    SRT_ASSIGN_OR_RETURN(Tensor t, make_input(d, p.seq));
    SRT_RETURN_IF_ERROR(ctx->set_input_shape(d.name, t.dims()));
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(e.device(), t.nbytes()));
    SRT_RETURN_IF_ERROR(b.copy_from_host(t.data(), t.nbytes()));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address(d.name, b.data(), t.nbytes()));
    bufs.push_back(std::move(b));
  }
  for (const TensorDesc& d : e.io_tensors()) {
    if (d.is_input) continue;
    SRT_ASSIGN_OR_RETURN(Dims dims, ctx->tensor_shape(d.name));
    uint64_t bytes = dtype_size(d.dtype);
    for (int64_t x : dims) bytes *= static_cast<uint64_t>(x);
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(e.device(), bytes));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address(d.name, b.data(), bytes));
    bufs.push_back(std::move(b));
  }
  if (graph) SRT_RETURN_IF_ERROR(ctx->set_cuda_graph(true));
  std::vector<double> ms;
  StreamingStats last;
  for (int i = 0; i < warmup + iters; ++i) {
    ctx->set_streaming_profiling(i == warmup);  // one profiled run; the others are timed plainly
    auto t0 = std::chrono::steady_clock::now();
    SRT_RETURN_IF_ERROR(ctx->execute());
    double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i == warmup) {
      SRT_ASSIGN_OR_RETURN(last, ctx->last_run_stats());
    } else if (i > warmup || iters == 1) {
      ms.push_back(t);
    }
  }
  std::sort(ms.begin(), ms.end());
  char line[512];
  std::snprintf(line, sizeof line,
                "{\"impl\": \"streamrt\", \"seq\": %lld, \"budget_pct\": %d, \"budget_bytes\": %llu, "
                "\"streamable_bytes\": %llu, \"median_ms\": %.4f, \"min_ms\": %.4f, \"bytes_streamed\": %llu, "
                "\"stall_ms\": %.4f, \"copy_ms\": %.4f, \"scratch_bytes\": %llu, \"cuda_graph\": %s}",
                static_cast<long long>(p.seq), p.pct, static_cast<unsigned long long>(e.weight_streaming_budget()),
                static_cast<unsigned long long>(streamable), ms[ms.size() / 2], ms.front(),
                static_cast<unsigned long long>(last.bytes_streamed), last.stall_ms, last.copy_ms,
                static_cast<unsigned long long>(e.weight_streaming_scratch_size()), graph ? "true" : "false");
  return std::string(line);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"streamrt weight-streaming budget sweep"};
  std::string plan, input = "hidden_states", json;
  std::vector<int64_t> seqs{1};
  std::vector<int> budgets{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  int iters = 5, warmup = 1, settle = 5;
  bool graph = false;
  app.add_option("plan", plan, "plan built with --weight-streaming")->required();
  app.add_option("--input", input, "the input whose dim 1 is the sequence");
  app.add_option("--seqs", seqs, "sequence lengths")->delimiter(',');
  app.add_option("--budgets", budgets, "budgets in percent of the streamable size")->delimiter(',')
      ->check(CLI::Range(0, 100));
  app.add_option("--iters", iters, "timed runs per point")->check(CLI::Range(1, 1000));
  app.add_option("--warmup", warmup, "untimed runs per point (the first is profiled)")->check(CLI::Range(1, 100));
  app.add_option("--settle", settle, "more untimed runs before the first point")->check(CLI::Range(0, 100));
  app.add_option("--json", json, "append JSON lines here too");
  app.add_flag("--cuda-graph", graph, "replay runs as a CUDA graph");
  CLI11_PARSE(app, argc, argv);
  // STREAMRT_STEP_TIMES / STREAMRT_STREAM_TRACE / STREAMRT_PROFILE, as bench/streaming/run.sh sets them.
  RuntimeOptions ro;
  if (Status st = runtime_options_from_environment(ro, std::getenv); !st.ok())
    return std::fprintf(stderr, "error: %s\n", st.to_string().c_str()), 1;
  auto rt = Runtime::create(ro);
  if (!rt.ok()) return std::fprintf(stderr, "error: %s\n", rt.status().to_string().c_str()), 1;
  auto t0 = std::chrono::steady_clock::now();
  auto e = (*rt)->load_engine(plan);
  if (!e.ok()) return std::fprintf(stderr, "error: %s\n", e.status().to_string().c_str()), 1;
  std::fprintf(stderr, "loaded %s in %.1f s: %s streamable of %s weights\n", plan.c_str(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               format_bytes((*e)->streamable_weights_size()).c_str(), format_bytes((*e)->weights_size()).c_str());
  std::ofstream out;
  if (!json.empty()) out.open(json, std::ios::app);
  int failures = 0;
  bool first = true;
  for (int64_t seq : seqs)
    for (int pct : budgets) {
      auto line = run_point(**e, input, {seq, pct}, iters, first ? warmup + settle : warmup, graph);
      first = false;
      if (!line.ok()) {
        std::fprintf(stderr, "seq %lld budget %d%%: %s\n", static_cast<long long>(seq), pct,
                     line.status().to_string().c_str());
        ++failures;
        continue;
      }
      std::printf("%s\n", line->c_str());
      std::fflush(stdout);
      if (out) out << *line << "\n" << std::flush;
    }
  return failures ? 1 : 0;
}
