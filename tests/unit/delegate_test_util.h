// The graph-break model of the delegate tests, and the plain engine's output for it.
//
//   x f32[1,256] -> MatMul W1 -> Relu -> MatMul W2 -> Softmax -> MatMul W3 -> Relu -> MatMul W4
//                -> MatMul W5 -> y f32[1,256]
// Every W is f32[256,256] (256 KiB, above the 64 KiB streamable threshold). Compiled with
// --fallback-ops Softmax it is two engines (W1, W2: 512 KiB streamable; W3..W5: 768 KiB) around
// a portable Softmax kernel call.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "delegate/compile.h"
#include "onnx_model_util.h"
#include "streamrt/program.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::testing {

inline constexpr int64_t kBreakWidth = 256;
inline constexpr uint64_t kWeightBytes = kBreakWidth * kBreakWidth * 4;
inline constexpr uint64_t kEngine0Streamable = 2 * kWeightBytes;  // W1, W2
inline constexpr uint64_t kEngine1Streamable = 3 * kWeightBytes;  // W3, W4, W5

// Deterministic values in [-1, 1) (a 32-bit LCG), scaled by `scale`.
inline std::vector<float> lcg_values(size_t n, uint32_t seed, float scale) {
  std::vector<float> v(n);
  for (float& f : v) {
    seed = seed * 1664525u + 1013904223u;
    f = scale * (static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f);
  }
  return v;
}

inline std::vector<float> break_model_input() { return lcg_values(kBreakWidth, 7, 1.f); }

inline onnx::ModelProto graph_break_model() {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("brk");
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, kBreakWidth});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, kBreakWidth});
  // Uniform(-a, a) with a = sqrt(3 / fan_in) keeps the activations' scale from layer to layer;
  // W3 sees Softmax's outputs (about 1/256 each), so it is scaled up to keep a signal.
  const float a = std::sqrt(3.f / kBreakWidth);
  const float scales[5] = {2 * a, 2 * a, 64 * a, 2 * a, a};
  for (int i = 0; i < 5; ++i)
    *g->add_initializer() = f32_raw("W" + std::to_string(i + 1), {kBreakWidth, kBreakWidth},
                                    lcg_values(kWeightBytes / 4, 100 + i, scales[i]));
  add_node(g, "MatMul", "mm1", {"x", "W1"}, {"h1"});
  add_node(g, "Relu", "relu1", {"h1"}, {"h2"});
  add_node(g, "MatMul", "mm2", {"h2", "W2"}, {"h3"});
  add_node(g, "Softmax", "softmax", {"h3"}, {"s"});
  add_node(g, "MatMul", "mm3", {"s", "W3"}, {"h4"});
  add_node(g, "Relu", "relu2", {"h4"}, {"h5"});
  add_node(g, "MatMul", "mm4", {"h5", "W4"}, {"h6"});
  add_node(g, "MatMul", "mm5", {"h6", "W5"}, {"y"});
  return m;
}

inline std::string write_graph_break_model(const std::string& dir) {
  const std::string path = dir + "/graph_break.onnx";
  write_file(path, serialize(graph_break_model()));
  return path;
}

// The whole model as one plain engine on the CPU, run on `input`.
inline std::vector<float> plain_engine_output(const std::string& onnx_path, const std::vector<float>& input) {
  BuilderConfig config;
  auto bytes = build_plan_from_onnx(onnx_path, config);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto engine = Runtime::create(cpu).value()->load_engine_bytes(std::move(bytes).value());
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_execution_context().value();
  std::vector<float> x = input, y(kBreakWidth);
  EXPECT_TRUE(ctx->set_tensor_address("x", x.data(), x.size() * 4).ok());
  EXPECT_TRUE(ctx->set_tensor_address("y", y.data(), y.size() * 4).ok());
  Status st = ctx->execute();
  EXPECT_TRUE(st.ok()) << st.to_string();
  return y;
}

// The graph-break model compiled for the CPU with Softmax falling back to a portable kernel.
inline delegate::CompiledProgram compile_break(const std::string& onnx_path, bool weight_streaming,
                                               std::optional<std::string> budget = std::nullopt,
                                               std::optional<std::string> per_engine = std::nullopt) {
  delegate::CompileOptions o;
  o.builder.device = DeviceType::kCpu;
  o.builder.weight_streaming = weight_streaming;
  o.fallback_ops = {"Softmax"};
  o.budget = std::move(budget);
  o.budget_per_engine = std::move(per_engine);
  auto r = delegate::compile_onnx(onnx_path, o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : delegate::CompiledProgram{};
}

// Writes `p` to `path`, its delegates renamed to `backend` when given.
inline std::string write_compiled(delegate::CompiledProgram p, const std::string& path,
                                  const std::string& backend = "") {
  for (auto& m : p.data.methods)
    for (auto& d : m.delegates)
      if (!backend.empty()) d.backend = backend;
  Status st = program::write_program(p.data, p.segments, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return path;
}

inline LoadBackendOptionsMap srt_options(const std::string& key, BackendOptionValue value,
                                         const std::string& backend = "StreamRTBackend") {
  BackendOptions o;
  o.set_option(key, std::move(value));
  LoadBackendOptionsMap map;
  EXPECT_TRUE(map.set_options(backend, o).ok());
  return map;
}

// Each engine's budget in force, as get_option reports it.
inline std::vector<uint64_t> engine_budgets(const Module& m, const std::string& backend = "StreamRTBackend") {
  BackendOption count{"num_engines", int64_t{0}};
  Status st = m.get_backend_option(backend, {&count, 1});
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::vector<uint64_t> out;
  for (int64_t i = 0; st.ok() && i < std::get<int64_t>(count.value); ++i) {
    BackendOption o{"weight_streaming_budget." + std::to_string(i), std::string()};
    EXPECT_TRUE(m.get_backend_option(backend, {&o, 1}).ok());
    out.push_back(std::stoull(std::get<std::string>(o.value)));
  }
  return out;
}

inline Result<std::vector<float>> run_forward(const Module& m, const std::vector<float>& input) {
  SRT_ASSIGN_OR_RETURN(auto out, m.forward({Tensor::from_vector<float>(DataType::kFloat32, {1, kBreakWidth}, input)}));
  if (out.size() != 1 || !out[0].is_tensor()) return internal_error("forward returned no tensor");
  return out[0].tensor()->to_float_vector();
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// A tiny program for corpora: x f32[1,4] -> MatMul W f32[4,4] -> Softmax (portable) -> Relu
// -> y: two small engines around a kernel call.
inline delegate::CompiledProgram tiny_compiled_program() {
  ir::Graph g;
  g.name = "tiny";
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {1, 4}, true);
  const ir::ValueId w = g.add_value("W", DataType::kFloat32, {4, 4}, true);
  g.set_constant(w, Tensor::from_vector<float>(DataType::kFloat32, {4, 4}, lcg_values(16, 3, 1.f)));
  g.inputs = {x};
  auto node = [&](const std::string& op, std::vector<ir::ValueId> in, const std::string& out) {
    ir::Node n;
    n.name = op;
    n.op_type = op;
    n.opset = 17;
    n.inputs = std::move(in);
    n.outputs = {g.add_value(out)};
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  const ir::ValueId y = node("Relu", {node("Softmax", {node("MatMul", {x, w}, "h")}, "s")}, "y");
  g.outputs = {y};
  delegate::CompileOptions o;
  o.fallback_ops = {"Softmax"};
  o.budget = "50%";
  auto r = delegate::compile_graph(std::move(g), o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : delegate::CompiledProgram{};
}

// Threads calling forward on `m` until stopped, counting outputs that differ from `want`.
class ForwardLoad {
 public:
  ForwardLoad(const Module& m, std::vector<float> want, int threads) : want_(std::move(want)) {
    for (int t = 0; t < threads; ++t)
      threads_.emplace_back([this, &m] {
        while (!stop_.load()) {
          auto y = run_forward(m, break_model_input());
          if (!y.ok() || *y != want_) ++wrong_;
          ++runs_;
        }
      });
  }
  ~ForwardLoad() { stop(); }
  // Returns once `n` more runs completed: executions are in flight around the caller's next step.
  void wait_for_runs(int n) {
    const int before = runs_.load();
    while (runs_.load() < before + n) std::this_thread::yield();
  }
  void stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  int runs() const { return runs_.load(); }
  int wrong() const { return wrong_.load(); }

 private:
  std::vector<float> want_;
  std::atomic<bool> stop_{false};
  std::atomic<int> runs_{0}, wrong_{0};
  std::vector<std::thread> threads_;
};

}  // namespace streamrt::testing
