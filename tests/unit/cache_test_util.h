// Helpers for the engine cache and refit tests: a small Gemm+Relu model whose weights come from
// a seed, its naive reference, and running a plan on the CPU.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "onnx_model_util.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::testing {

struct GemmModel {
  int in = 4, out = 3;
  uint32_t seed = 1;          // weight values
  std::string w_name = "W";   // weight names
  std::string b_name = "B";
  float alpha = 1.f;          // Gemm attribute
  bool relu = true;           // Relu, or Sigmoid when false
  std::vector<float> w, b;    // filled by make()

  onnx::ModelProto make() {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.f, 1.f);
    w.assign(static_cast<size_t>(in) * out, 0.f);
    b.assign(static_cast<size_t>(out), 0.f);
    for (float& v : w) v = n(rng) / std::sqrt(static_cast<float>(in));
    for (float& v : b) v = 0.1f * n(rng);
    onnx::ModelProto m = make_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), int64_t{in}});
    add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), int64_t{out}});
    *g->add_initializer() = f32_raw(w_name, {out, in}, w);
    *g->add_initializer() = f32_raw(b_name, {out}, b);
    auto* gemm = add_node(g, "Gemm", "gemm", {"x", w_name, b_name}, {"h"});
    auto* tb = gemm->add_attribute();
    tb->set_name("transB");
    tb->set_type(onnx::AttributeProto_AttributeType_INT);
    tb->set_i(1);
    auto* al = gemm->add_attribute();
    al->set_name("alpha");
    al->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    al->set_f(alpha);
    add_node(g, relu ? "Relu" : "Sigmoid", "act", {"h"}, {"y"});
    return m;
  }

  // Writes the model to `path`.
  void write(const std::string& path) { write_file(path, serialize(make())); }

  // y = act(alpha * x W^T + B), computed here (call after make()/write()).
  std::vector<float> reference(const std::vector<float>& x, int batch) const {
    std::vector<float> y(static_cast<size_t>(batch) * out);
    for (int r = 0; r < batch; ++r)
      for (int o = 0; o < out; ++o) {
        double acc = 0;
        for (int i = 0; i < in; ++i) acc += double(x[r * in + i]) * w[o * in + i];
        double h = alpha * acc + b[o];
        y[r * out + o] = static_cast<float>(relu ? std::max(0.0, h) : 1.0 / (1.0 + std::exp(-h)));
      }
    return y;
  }
};

inline std::vector<float> ramp(size_t n, float scale = 0.37f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(scale * static_cast<float>(i + 1));
  return v;
}

inline BuilderConfig batch_config(int in, int64_t max_batch = 4) {
  BuilderConfig c;
  c.profiles["x"] = {{1, in}, {2, in}, {max_batch, in}};
  return c;
}

inline std::shared_ptr<Engine> load_cpu(std::vector<uint8_t> plan) {
  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto rt = Runtime::create(cpu);
  EXPECT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(std::move(plan));
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return engine.ok() ? *engine : nullptr;
}

// Runs `engine` once on x f32[batch, in] and returns y (empty on failure, with a test failure).
inline std::vector<float> run_engine(Engine& engine, const std::vector<float>& x, int batch, int in, int out) {
  auto ctx = engine.create_execution_context();
  EXPECT_TRUE(ctx.ok()) << ctx.status().to_string();
  if (!ctx.ok()) return {};
  std::vector<float> xin = x, y(static_cast<size_t>(batch) * out);
  EXPECT_TRUE((*ctx)->set_input_shape("x", {batch, in}).ok());
  EXPECT_TRUE((*ctx)->set_tensor_address("x", xin.data(), xin.size() * 4).ok());
  EXPECT_TRUE((*ctx)->set_tensor_address("y", y.data(), y.size() * 4).ok());
  Status st = (*ctx)->execute();
  EXPECT_TRUE(st.ok()) << st.to_string();
  return st.ok() ? y : std::vector<float>{};
}

inline std::vector<float> run_plan(std::vector<uint8_t> plan, const std::vector<float>& x, int batch, int in, int out) {
  auto engine = load_cpu(std::move(plan));
  return engine ? run_engine(*engine, x, batch, in, out) : std::vector<float>{};
}

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace streamrt::testing
