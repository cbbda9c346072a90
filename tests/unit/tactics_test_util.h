// Shared by the tactic tests (tests/unit/tactics_test.cc on the host, tests/gpu/tactics_gpu_test.cc
// on a GPU): a float32 model with one MatMul and one Gemm with a bias, its naive reference, and
// running a plan on a device.
#pragma once

#include <cmath>
#include <random>

#include "onnx_model_util.h"
#include "plan/plan.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Y = Gemm(MatMul(X, W1), W2, C, transB = 1): X f32[batch, k] (batch dynamic), W1 [k, h],
// W2 [n, h], C [n]; weights random.
struct TacticGemmModel {
  int64_t k = 0, h = 0, n = 0;
  std::vector<float> w1, w2, c;

  // Weights scaled by 1 / sqrt(fan-in), so outputs stay near 1 whatever the sizes.
  TacticGemmModel(int64_t k_, int64_t h_, int64_t n_) : k(k_), h(h_), n(n_) {
    w1 = random_floats(static_cast<size_t>(k * h), 1);
    w2 = random_floats(static_cast<size_t>(n * h), 2);
    c = random_floats(static_cast<size_t>(n), 3);
    for (float& w : w1) w /= std::sqrt(static_cast<float>(k));
    for (float& w : w2) w /= std::sqrt(static_cast<float>(h));
  }

  std::string write(const TempDir& dir) const {
    onnx::ModelProto m = make_model(17);
    auto* g = m.mutable_graph();
    add_input(g, "X", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), k});
    add_output(g, "Y", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), n});
    *g->add_initializer() = f32_raw("W1", {k, h}, w1);
    *g->add_initializer() = f32_raw("W2", {n, h}, w2);
    *g->add_initializer() = f32_raw("C", {n}, c);
    add_node(g, "MatMul", "mm", {"X", "W1"}, {"H"});
    auto* gemm = add_node(g, "Gemm", "fc", {"H", "W2", "C"}, {"Y"});
    auto* tb = gemm->add_attribute();
    tb->set_name("transB");
    tb->set_type(onnx::AttributeProto_AttributeType_INT);
    tb->set_i(1);
    const std::string path = dir.file("gemm_model.onnx");
    write_file(path, serialize(m));
    return path;
  }

  // Naive double-precision reference for x of `batch` rows.
  std::vector<double> reference(const std::vector<float>& x, int64_t batch) const {
    std::vector<double> y(static_cast<size_t>(batch * n));
    std::vector<double> hid(static_cast<size_t>(h));
    for (int64_t r = 0; r < batch; ++r) {
      for (int64_t j = 0; j < h; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += double(x[r * k + p]) * w1[p * h + j];
        hid[j] = static_cast<float>(s);  // H is a float32 tensor
      }
      for (int64_t j = 0; j < n; ++j) {
        double s = c[j];
        for (int64_t p = 0; p < h; ++p) s += hid[p] * w2[j * h + p];
        y[r * n + j] = s;
      }
    }
    return y;
  }
};

// Runs a plan on `device` with X = x (dims {batch, k}) and returns Y.
inline Result<std::vector<float>> run_gemm_plan(DeviceType device, std::vector<uint8_t> plan, const std::vector<float>& x,
                                                int64_t batch, int64_t k, int64_t n) {
  RuntimeOptions ro;
  ro.device = device;
  SRT_ASSIGN_OR_RETURN(auto rt, Runtime::create(ro));
  SRT_ASSIGN_OR_RETURN(auto engine, rt->load_engine_bytes(std::move(plan)));
  SRT_ASSIGN_OR_RETURN(auto ctx, engine->create_execution_context());
  const size_t x_bytes = x.size() * sizeof(float), y_bytes = static_cast<size_t>(batch * n) * sizeof(float);
  if (x.size() != static_cast<size_t>(batch * k)) return invalid_argument("x has the wrong size");
  SRT_ASSIGN_OR_RETURN(DeviceBuffer xb, DeviceBuffer::allocate(device, x_bytes));
  SRT_ASSIGN_OR_RETURN(DeviceBuffer yb, DeviceBuffer::allocate(device, y_bytes));
  SRT_RETURN_IF_ERROR(xb.copy_from_host(x.data(), x_bytes));
  SRT_RETURN_IF_ERROR(ctx->set_input_shape("X", {batch, k}));
  SRT_RETURN_IF_ERROR(ctx->set_tensor_address("X", xb.data(), x_bytes));
  SRT_RETURN_IF_ERROR(ctx->set_tensor_address("Y", yb.data(), y_bytes));
  SRT_RETURN_IF_ERROR(ctx->execute());
  std::vector<float> y(static_cast<size_t>(batch * n));
  SRT_RETURN_IF_ERROR(yb.copy_to_host(y.data(), y_bytes));
  return y;
}

// The plan's step of `op_type` (first one), or null.
inline ir::Node* find_step(plan::PlanData& p, const std::string& op_type) {
  for (ir::Node& s : p.steps)
    if (s.op_type == op_type) return &s;
  return nullptr;
}

// Reads plan bytes back (the returned plan's weight views point into `bytes`, kept alive by the holder).
inline plan::PlanData read_back(const std::vector<uint8_t>& bytes) {
  auto holder = std::make_shared<std::vector<uint8_t>>(bytes);
  auto lp = plan::read_plan_bytes(holder->data(), holder->size(), holder);
  EXPECT_TRUE(lp.ok()) << lp.status().to_string();
  return lp.ok() ? lp->data : plan::PlanData{};
}

}  // namespace streamrt::testing
