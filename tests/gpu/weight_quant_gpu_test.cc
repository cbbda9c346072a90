// GPU tests of weight-only quantization (ops/weight_quant.h, kernels/weight_only_matmul.cu; they
// skip without a CUDA device): a MatMul with a fused bias, built with --weight-quant int8 / int4
// for CUDA and for the CPU from the same model, must give the same outputs up to float
// accumulation order, on the GEMV path (rows <= 8) and the tiled GEMM path, for K that is and is
// not a multiple of 16 bytes / of the group, in float32 and float16; and a streamed CUDA plan
// moves its compressed bytes at budget 0. Pre-quantized models (builder/import_quantized.cc:
// 8-bit codes with zero points, 4-bit groups of 16 and 256, MatMulNBits) likewise.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "backends/cuda/cuda_kernel_registry.h"
#include "gpu_test_util.h"
#include "onnx_model_util.h"
#include "ops/weight_quant.h"
#include "quant_import_util.h"
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

// The model built for CUDA and for the CPU gives the same `count` outputs, up to float
// accumulation order (float16 rounds the output once on each side, maybe on either side of a half step).
void expect_cuda_matches_cpu(const std::string& model, const WeightQuant& q, DataType precision,
                             const std::map<std::string, Tensor>& in, int64_t count) {
  auto gpu = load(model, DeviceType::kCuda, q, precision, false);
  auto cpu = load(model, DeviceType::kCpu, q, precision, false);
  ASSERT_TRUE(gpu && cpu);
  auto got = run_once(*gpu, in);
  auto want = run_once(*cpu, in);
  ASSERT_TRUE(got.ok() && want.ok());
  const float* g = reinterpret_cast<const float*>((*got)[0].data());
  const float* w = reinterpret_cast<const float*>((*want)[0].data());
  const double tol = precision == DataType::kFloat32 ? 1e-4 : precision == DataType::kFloat16 ? 4e-3 : 1.6e-2;
  for (int64_t i = 0; i < count; ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
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

// Every (m, k) of a y = x W + b model with n channels, built with each scheme in each precision
// (float32 and float16 unless given), on CUDA against the CPU.
void expect_cuda_matches_cpu_over(const std::vector<WeightQuant>& schemes, std::initializer_list<int64_t> ms,
                                  std::initializer_list<int64_t> ks, int64_t n, uint32_t seed,
                                  std::initializer_list<DataType> precisions = {DataType::kFloat32,
                                                                                DataType::kFloat16}) {
  for (int64_t m : ms)
    for (int64_t k : ks) {
      const std::string model = write_model(m, k, n);
      std::map<std::string, Tensor> in;
      in["x"] = Tensor::from_vector<float>(DataType::kFloat32, {m, k}, random_floats(static_cast<size_t>(m * k), seed));
      for (const WeightQuant& q : schemes)
        for (DataType precision : precisions) {
          SCOPED_TRACE(weight_quant_name(q) + " m " + std::to_string(m) + " k " + std::to_string(k) + " " +
                       dtype_name(precision));
          expect_cuda_matches_cpu(model, q, precision, in, m * n);
        }
      std::filesystem::remove(model);
    }
}

TEST_F(GpuWeightQuant, CudaMatchesTheCpuKernelOnGemvAndGemmPaths) {
  expect_cuda_matches_cpu_over({{WeightQuantScheme::kInt8, 128}, {WeightQuantScheme::kFp8, 128},
                                {WeightQuantScheme::kInt4, 32}, {WeightQuantScheme::kInt4, 64},
                                {WeightQuantScheme::kInt4, 128}},
                               {1, 3, 8, 9, 130}, {200, 256, 1000}, 300, 3);
}

// float8 codes through each kernel (one row, 2..8 rows, the tiled GEMM) in every float type, with K
// and N no multiple of 16 bytes or of a channel pair: odd K reads codes unaligned, odd N leaves a
// spare channel (from the helper's fp8 branch).
TEST_F(GpuWeightQuant, Fp8MatchesTheCpuKernelInEveryFloatType) {
  expect_cuda_matches_cpu_over({{WeightQuantScheme::kFp8, 128}}, {1, 2, 5, 8, 9, 130}, {7, 200, 1001}, 67, 9,
                               {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16});
}

// Long rows take the GEMV with two or four warps a channel pair (their sums meet in shared memory):
// int8 from K > 1024, int4 from K > 2048; an odd channel count leaves a spare channel in the last pair.
TEST_F(GpuWeightQuant, GemvOnLongRowsSplitsARowAmongWarps) {
  expect_cuda_matches_cpu_over({{WeightQuantScheme::kInt8, 128}, {WeightQuantScheme::kFp8, 128},
                                {WeightQuantScheme::kInt4, 32}, {WeightQuantScheme::kInt4, 128}},
                               {1, 4, 8}, {2000, 4100, 8192}, 71, 5);
}

// A streamed CUDA plan of `model` (one row, k -> n) holds `expected` streamable bytes, moves them
// all at budget 0 and computes what the CPU plan does.
void expect_streams_compressed_bytes(const std::string& model, const WeightQuant& q, int64_t k, int64_t n,
                                     uint64_t expected) {
  auto streamed = load(model, DeviceType::kCuda, q, DataType::kFloat32, true);
  auto cpu = load(model, DeviceType::kCpu, q, DataType::kFloat32, false);
  ASSERT_TRUE(streamed && cpu);
  EXPECT_EQ(streamed->streamable_weights_size(), expected);
  ASSERT_TRUE(streamed->set_weight_streaming_budget(0).ok());
  std::map<std::string, Tensor> in;
  in["x"] = Tensor::from_vector<float>(DataType::kFloat32, {1, k}, random_floats(static_cast<size_t>(k), 4));
  StreamingStats stats;
  auto got = run_once(*streamed, in, &stats);
  auto want = run_once(*cpu, in);
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_EQ(stats.bytes_streamed, expected);
  const float* g = reinterpret_cast<const float*>((*got)[0].data());
  const float* w = reinterpret_cast<const float*>((*want)[0].data());
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(g[i], w[i], 1e-4 * (1 + std::fabs(w[i]))) << "element " << i;
}

TEST_F(GpuWeightQuant, StreamedAtBudgetZeroMovesTheCompressedBytes) {
  const int64_t k = 1024, n = 512;
  const std::string model = write_model(1, k, n);
  // Codes, float32 scales, zero points, float32 bias.
  const uint64_t groups = k / 64;
  expect_streams_compressed_bytes(model, {WeightQuantScheme::kInt4, 64}, k, n,
                                  n * k / 2 + n * groups * 4 + n * groups + n * 4);
  expect_streams_compressed_bytes(model, {WeightQuantScheme::kFp8, 128}, k, n, n * k + n * 4 + n * 4);
  std::filesystem::remove(model);
}

// Models that store their weights quantized (tests/unit/quant_import_util.h): the formats only
// they bring (8-bit zero points, groups of 16 and 256), built for CUDA and for the CPU.
TEST_F(GpuWeightQuant, PreQuantizedModelsMatchTheCpuKernel) {
  using Spec = QuantWeightSpec;
  using L = Spec::Layout;
  using F = Spec::Form;
  const int i8 = onnx::TensorProto_DataType_INT8, u8 = onnx::TensorProto_DataType_UINT8;
  std::vector<Spec> specs;
  for (int64_t m : {1, 5, 8, 9, 130}) {
    specs.push_back({F::kDequantize, i8, L::kChannel, 0, true, "MatMul", false, true, m, 200, 300});
    specs.push_back({F::kDequantize, u8, L::kTensor, 0, true, "Gemm", false, false, m, 256, 96});
    specs.push_back({F::kDequantize, kOnnxUInt4, L::kBlocked, 16, true, "MatMul", false, false, m, 200, 72});
    specs.push_back({F::kDequantize, kOnnxInt4, L::kBlocked, 16, true, "MatMul", false, false, m, 208, 40});
    specs.push_back({F::kDequantize, kOnnxInt4, L::kBlocked, 256, false, "MatMul", false, true, m, 1000, 64});
    specs.push_back({F::kDequantize, kOnnxInt4, L::kChannel, 0, true, "MatMul", false, false, m, 100, 50});
    specs.push_back({F::kMatMulNBits, 0, L::kBlocked, 32, true, "", false, true, m, 256, 300});
  }
  uint32_t seed = 50;
  for (const Spec& s : specs) {
    const QuantWeightModel q = make_quant_weight_model(s, seed++);
    const auto path = std::filesystem::temp_directory_path() / ("srt_wq_gpu_pre_" + std::to_string(getpid()) + ".onnx");
    write_file(path, serialize(q.model));
    std::map<std::string, Tensor> in;
    in["x"] = Tensor::from_vector<float>(DataType::kFloat32, {s.m, s.k}, random_floats(static_cast<size_t>(s.m * s.k), 3));
    for (DataType precision : {DataType::kFloat32, DataType::kFloat16}) {
      SCOPED_TRACE(s.name() + " " + dtype_name(precision));
      expect_cuda_matches_cpu(path.string(), {}, precision, in, s.m * s.n);
    }
    std::filesystem::remove(path);
  }
}

TEST_F(GpuWeightQuant, PreQuantizedEightBitZeroPointsStreamCompressedAtBudgetZero) {
  const QuantWeightSpec s{QuantWeightSpec::Form::kDequantize, onnx::TensorProto_DataType_UINT8,
                          QuantWeightSpec::Layout::kChannel, 0, true, "MatMul", false, false, 1, 1024, 512};
  const QuantWeightModel q = make_quant_weight_model(s, 77);
  const auto path = std::filesystem::temp_directory_path() / ("srt_wq_gpu_zp_" + std::to_string(getpid()) + ".onnx");
  write_file(path, serialize(q.model));
  // int8 codes, float32 scales, int8 zero points.
  expect_streams_compressed_bytes(path.string(), {}, s.k, s.n, s.n * s.k + s.n * 4 + s.n);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace streamrt
