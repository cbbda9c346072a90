// GPU tests of weight-only quantization (ops/weight_quant.h, kernels/weight_only_matmul.cu; they
// skip without a CUDA device): a MatMul with a fused bias, built with --weight-quant int8 / int4
// for CUDA and for the CPU from the same model, must give the same outputs up to float
// accumulation order, on the GEMV path (rows <= 8) and the tiled GEMM path, for K that is and is
// not a multiple of 16 bytes / of the group, in float32 and float16; and a streamed CUDA plan
// moves its compressed bytes at budget 0.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "backends/cuda/cuda_kernel_registry.h"
#include "gpu_test_util.h"
#include "onnx_model_util.h"
#include "ops/weight_quant.h"
#include "streaming_test_util.h"
#include "tactics_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

// y = MatMul(x [m, k], W [k, n]) + b [n].
std::string write_model(int64_t m, int64_t k, int64_t n) {
  onnx::ModelProto model = make_model(13);
  auto* g = model.mutable_graph();
  const int f = onnx::TensorProto_DataType_FLOAT;
  add_input(g, "x", f, {m, k});
  add_output(g, "y", f, {m, n});
  *g->add_initializer() = f32_raw("W", {k, n}, random_floats(static_cast<size_t>(k * n), 1));
  *g->add_initializer() = f32_raw("b", {n}, random_floats(static_cast<size_t>(n), 2));
  add_node(g, "MatMul", "mm", {"x", "W"}, {"h"});
  add_node(g, "Add", "add", {"h", "b"}, {"y"});
  const auto path = std::filesystem::temp_directory_path() /
                    ("srt_wq_gpu_" + std::to_string(getpid()) + "_" + std::to_string(m) + "_" + std::to_string(k) + ".onnx");
  write_file(path, serialize(model));
  return path.string();
}

std::shared_ptr<Engine> load(const std::string& model, DeviceType device, const WeightQuant& q, DataType precision,
                             bool streaming) {
  BuilderConfig c;
  c.device = device;
  c.weight_quant = q;
  c.float_precision = precision;
  c.weight_streaming = streaming;
  c.min_streamable_bytes = 1;
  c.tactics = false;
  auto plan = build_plan_from_onnx(model, c);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  if (!plan.ok()) return nullptr;
  RuntimeOptions ro;
  ro.device = device;
  auto engine = Runtime::create(ro).value()->load_engine_bytes(std::move(plan).value());
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

class GpuWeightQuant : public ::testing::Test {
 protected:
  void SetUp() override { SRT_REQUIRE_GPU(); }
};

TEST_F(GpuWeightQuant, TheStepHasACudaKernelForEveryFloatType) {
  ir::Node n;
  n.op_type = ops::kWeightOnlyMatMul;
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    std::string why;
    EXPECT_NE(cuda::cuda_kernel_for(n, t, &why), nullptr) << dtype_name(t) << ": " << why;
  }
}

TEST_F(GpuWeightQuant, CudaMatchesTheCpuKernelOnGemvAndGemmPaths) {
  const std::vector<WeightQuant> schemes = {{WeightQuantScheme::kInt8, 128}, {WeightQuantScheme::kInt4, 32},
                                            {WeightQuantScheme::kInt4, 64}, {WeightQuantScheme::kInt4, 128}};
  for (int64_t m : {1, 3, 8, 9, 130})
    for (int64_t k : {200, 256, 1000}) {
      const int64_t n = 300;
      const std::string model = write_model(m, k, n);
      std::map<std::string, Tensor> in;
      in["x"] = Tensor::from_vector<float>(DataType::kFloat32, {m, k}, random_floats(static_cast<size_t>(m * k), 3));
      for (const WeightQuant& q : schemes)
        for (DataType precision : {DataType::kFloat32, DataType::kFloat16}) {
          SCOPED_TRACE(weight_quant_name(q) + " m " + std::to_string(m) + " k " + std::to_string(k) + " " +
                       dtype_name(precision));
          auto gpu = load(model, DeviceType::kCuda, q, precision, false);
          auto cpu = load(model, DeviceType::kCpu, q, precision, false);
          ASSERT_TRUE(gpu && cpu);
          auto got = run_once(*gpu, in);
          auto want = run_once(*cpu, in);
          ASSERT_TRUE(got.ok() && want.ok());
          const float* g = reinterpret_cast<const float*>((*got)[0].data());
          const float* w = reinterpret_cast<const float*>((*want)[0].data());
          // float16 rounds the output once on each side, maybe on either side of a half step.
          const double tol = precision == DataType::kFloat32 ? 1e-4 : 4e-3;
          for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
        }
      std::filesystem::remove(model);
    }
}

TEST_F(GpuWeightQuant, StreamedAtBudgetZeroMovesTheCompressedBytes) {
  const int64_t m = 1, k = 1024, n = 512;
  const std::string model = write_model(m, k, n);
  std::map<std::string, Tensor> in;
  in["x"] = Tensor::from_vector<float>(DataType::kFloat32, {m, k}, random_floats(static_cast<size_t>(m * k), 4));
  const WeightQuant q{WeightQuantScheme::kInt4, 64};
  auto streamed = load(model, DeviceType::kCuda, q, DataType::kFloat32, true);
  auto cpu = load(model, DeviceType::kCpu, q, DataType::kFloat32, false);
  std::filesystem::remove(model);
  ASSERT_TRUE(streamed && cpu);
  // Codes, float32 scales, zero points, float32 bias.
  const uint64_t groups = k / 64, expected = n * k / 2 + n * groups * 4 + n * groups + n * 4;
  EXPECT_EQ(streamed->streamable_weights_size(), expected);
  ASSERT_TRUE(streamed->set_weight_streaming_budget(0).ok());
  StreamingStats stats;
  auto got = run_once(*streamed, in, &stats);
  auto want = run_once(*cpu, in);
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_EQ(stats.bytes_streamed, expected);
  const float* g = reinterpret_cast<const float*>((*got)[0].data());
  const float* w = reinterpret_cast<const float*>((*want)[0].data());
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(g[i], w[i], 1e-4 * (1 + std::fabs(w[i]))) << "element " << i;
}

}  // namespace
}  // namespace streamrt
