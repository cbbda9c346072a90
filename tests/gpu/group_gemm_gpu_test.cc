// GPU tests of the group GEMM (kernels/group_gemm.h; skip without a CUDA device, and where the
// device is not sm_90, after checking that the kernel refuses it; the operand checks run without one): float16 and bfloat16, one to
// three weights of different widths in one launch, SwiGLU's gate in the epilogue, biases, rows and
// columns that end inside a tile and K that ends inside a step, against a double-precision product
// of the same rounded operands (each product rounded to the type, the gate from the rounded ones).
// Through a plan: a MatMulGroup step run with RuntimeOptions::group_gemm_kernel = kGroup against
// the CPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../unit/conv_test_util.h"
#include "backends/cuda/kernels/group_gemm.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"
#include "matmul_group_graph.h"
#include "ops/fused_elementwise.h"
#include "ops/matmul_group.h"

namespace streamrt::cuda {
namespace {

using testing::from_bits;
using testing::to_bits;
double rounded(double v, DataType t) { return from_bits(to_bits(static_cast<float>(v), t), t); }

struct Operand {
  std::vector<double> values;  // before bits: its initializer fills them
  std::vector<uint16_t> bits;
  void* device = nullptr;
  Operand(size_t count, float scale, DataType t, uint32_t seed)
      : bits(testing::random_half(count, scale, t, seed, &values)) {
    EXPECT_EQ(cudaMalloc(&device, count * 2 + 16), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(device, bits.data(), count * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  Operand(const Operand&) = delete;
  ~Operand() { cudaFree(device); }
};

using testing::device_resources;

struct Case {
  DataType dtype;
  int64_t rows, k;
  std::vector<int64_t> n;
  bool gate = false, bias = false;
  int cols = 0;      // accumulator columns (0: the kernel's default)
  int sms = 0;       // SMs the kernel is told of (0: the device's): fewer make each block take many tiles
  int y_offset = 0;  // output elements before y: 2 leaves y 4- but not 16-byte aligned (stores of pairs)
};

void run_case(const Case& c) {
  SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " rows " + std::to_string(c.rows) + " k " + std::to_string(c.k) +
               " parts " + std::to_string(c.n.size()) + (c.gate ? " gate" : "") + (c.bias ? " bias" : "") + " cols " +
               std::to_string(c.cols) + " sms " + std::to_string(c.sms) + " y offset " + std::to_string(c.y_offset));
  const size_t parts = c.n.size();
  Operand x(static_cast<size_t>(c.rows * c.k), 1.f, c.dtype, 1);
  std::vector<std::unique_ptr<Operand>> w, b;
  std::vector<void*> y(parts, nullptr);
  GroupGemm g;
  g.dtype = c.dtype, g.rows = c.rows, g.k = c.k, g.x = x.device, g.parts = static_cast<int>(parts), g.gate = c.gate;
  g.cols = c.cols;
  for (size_t i = 0; i < parts; ++i) {
    w.push_back(std::make_unique<Operand>(static_cast<size_t>(c.k * c.n[i]), 1.f / std::sqrt(float(c.k)), c.dtype,
                                          10 + static_cast<uint32_t>(i)));
    b.push_back(std::make_unique<Operand>(static_cast<size_t>(c.n[i]), 0.5f, c.dtype, 20 + static_cast<uint32_t>(i)));
    const size_t bytes = static_cast<size_t>(c.rows * c.n[i] + c.y_offset) * 2;
    ASSERT_EQ(cudaMalloc(&y[i], bytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(y[i], 0xFF, bytes), cudaSuccess);  // NaNs where nothing is written
    void* const out = static_cast<char*>(y[i]) + 2 * c.y_offset;
    g.part[i] = {w[i]->device, c.bias ? b[i]->device : nullptr, c.gate && i == 1 ? nullptr : out, c.n[i]};
  }
  CudaResources res = device_resources();
  if (c.sms > 0) res.sm_count = c.sms;
  const bool sm90 = res.cc_major == 9 && res.cc_minor == 0;
  ASSERT_EQ(group_gemm_applies(g, res), sm90);
  const Status st = group_gemm(g, res, nullptr);
  if (!sm90) {
    EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  } else {
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    // Each output rounded once from a float accumulation: half an ulp of the type plus float error.
    const double rtol = c.dtype == DataType::kFloat16 ? 2e-3 : 1.6e-2;
    auto product = [&](size_t i, int64_t r, int64_t j) {
      double v = c.bias ? b[i]->values[static_cast<size_t>(j)] : 0.0;
      for (int64_t q = 0; q < c.k; ++q)
        v += x.values[static_cast<size_t>(r * c.k + q)] * w[i]->values[static_cast<size_t>(q * c.n[i] + j)];
      return rounded(v, c.dtype);
    };
    for (size_t i = 0; i < (c.gate ? 1 : parts); ++i) {
      std::vector<uint16_t> got(static_cast<size_t>(c.rows * c.n[i] + c.y_offset));
      ASSERT_EQ(cudaMemcpy(got.data(), y[i], got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      for (int e = 0; e < c.y_offset; ++e) ASSERT_EQ(got[static_cast<size_t>(e)], 0xFFFF) << "written before y";
      for (int64_t r = 0; r < c.rows; ++r)
        for (int64_t j = 0; j < c.n[i]; ++j) {
          double want = product(i, r, j);
          if (c.gate) want = ops::fused::gate_value(static_cast<float>(want), static_cast<float>(product(1, r, j)));
          const double v = from_bits(got[static_cast<size_t>(c.y_offset + r * c.n[i] + j)], c.dtype);
          ASSERT_NEAR(v, want, rtol * (1.0 + std::fabs(want))) << "part " << i << " row " << r << " column " << j;
        }
    }
  }
  for (void* p : y) cudaFree(p);
}

TEST(GpuGroupGemm, MatchesDoubleProducts) {
  SRT_REQUIRE_GPU();
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16})
    for (int cols : {128, 256}) {
      run_case({t, 256, 512, {512, 256, 256}, false, false, cols});  // Q / K / V of a GQA layer: one launch
      run_case({t, 200, 520, {256, 136, 64}, false, true, cols});    // rows, column tiles and K ending inside
      run_case({t, 1, 64, {128}, false, false, cols});               // one row: zeros fill the rest of the tile
      run_case({t, 130, 256, {384, 384}, true, false, cols});        // gate / up, the gate in the epilogue
      run_case({t, 64, 1000, {200, 200}, true, true, cols});         // the gate with biases, a partial tile
      // Persistent blocks: five of them take every tile in turn (ring slots and phases run on across
      // tiles; K's 3 steps do not divide the ring), Q / K / V and the gate.
      run_case({t, 300, 192, {512, 256, 136}, false, true, cols, 5});
      run_case({t, 300, 192, {264, 264}, true, false, cols, 5});
      // y 4- but not 16-byte aligned: the epilogue writes pairs instead of whole 8-column blocks.
      run_case({t, 200, 520, {256, 136, 64}, false, true, cols, 0, 2});
      run_case({t, 130, 256, {384, 384}, true, false, cols, 0, 2});
    }
  run_case({DataType::kFloat16, 300, 128, {1024, 512}});  // the default's choice
}

// Operand checks only (the pointers are never read): runs without a GPU too.
TEST(GroupGemmHost, RefusesWhatItCannotReadAndChoosesWidths) {
  CudaResources res;
  res.cc_major = 9, res.cc_minor = 0, res.sm_count = 132;
  char* const base = reinterpret_cast<char*>(uintptr_t{1} << 20);  // 16-byte aligned, never dereferenced
  GroupGemm g;
  g.dtype = DataType::kFloat16, g.rows = 64, g.k = 64, g.x = base, g.parts = 1;
  g.part[0] = {base + 4096, nullptr, base + 8192, 64};
  EXPECT_TRUE(group_gemm_applies(g, res));
  GroupGemm bad = g;
  bad.dtype = DataType::kFloat32;
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = g, bad.k = 60;  // rows of X not 16-byte multiples: TMA cannot address them
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = g, bad.part[0].n = 12;
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = g, bad.x = base + 2;
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = g, bad.gate = true;  // the gate takes two weights of one width
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = g, bad.parts = 2, bad.gate = true, bad.part[1] = {base + 4096, nullptr, nullptr, 56};
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = g, bad.cols = 192;  // accumulators of 128 or 256 columns only
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = g, bad.part[0].y = nullptr;
  EXPECT_FALSE(group_gemm_applies(bad, res));
  res.cc_major = 8;
  EXPECT_FALSE(group_gemm_applies(g, res));
  EXPECT_EQ(group_gemm(g, res, nullptr).code(), StatusCode::kUnsupported);  // refused before any CUDA call
  res.cc_major = 9;

  // Default widths: 256 for the gate; 256 where every weight fills 256-column tiles and they make two
  // waves on the SMs, else 128.
  GroupGemm qkv = g;
  qkv.parts = 3, qkv.k = 2048;
  qkv.part[0].n = 2048, qkv.part[1] = qkv.part[2] = {base + 4096, nullptr, base + 8192, 512};
  qkv.rows = 512;  // 4 row tiles x 12 tiles of 256 columns = 48 blocks: under two waves of 132
  EXPECT_EQ(group_gemm_default_cols(qkv, res), 128);
  qkv.rows = 8192;  // 64 x 12 = 768 blocks
  EXPECT_EQ(group_gemm_default_cols(qkv, res), 256);
  qkv.part[1].n = qkv.part[2].n = 128;  // Qwen's K / V: not 256-column tiles
  EXPECT_EQ(group_gemm_default_cols(qkv, res), 128);
  GroupGemm gate = g;
  gate.parts = 2, gate.gate = true, gate.part[1] = {base + 4096, nullptr, nullptr, 64};
  EXPECT_EQ(group_gemm_default_cols(gate, res), 256);

  // Rotary tables: parts 0 and 1 of a group without the gate, heads of 64 at either width, heads of
  // 128 at 128 columns (the default then), cos and sin together, 4-byte aligned.
  GroupGemm rot = qkv;  // 8192 rows, N 2048 / 128 / 128
  rot.rotary_dim = 64, rot.part[0].cos = base + 16384, rot.part[0].sin = base + 32768, rot.part[0].table_rows = 8192;
  rot.part[1].cos = rot.part[0].cos, rot.part[1].sin = rot.part[0].sin, rot.part[1].table_rows = 8192;
  EXPECT_TRUE(group_gemm_applies(rot, res));
  bad = rot, bad.cols = 256;
  EXPECT_TRUE(group_gemm_applies(bad, res));
  bad = rot, bad.rotary_dim = 128, bad.part[1].n = bad.part[2].n = 256;
  EXPECT_EQ(group_gemm_default_cols(bad, res), 128);
  EXPECT_TRUE(group_gemm_applies(bad, res));
  bad.cols = 256;
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = rot, bad.rotary_dim = 32;  // heads of 32: rotated after the GEMM instead
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = rot, bad.part[1].sin = nullptr;
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = rot, bad.part[2].cos = bad.part[0].cos, bad.part[2].sin = bad.part[0].sin, bad.part[2].table_rows = 1;
  EXPECT_FALSE(group_gemm_applies(bad, res));  // the third product (V) is never rotated
  bad = rot, bad.part[0].cos = base + 16386;
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = rot, bad.part[0].table_rows = 0;
  EXPECT_FALSE(group_gemm_applies(bad, res));
  bad = rot, bad.part[1].n = 96;  // no whole heads
  EXPECT_FALSE(group_gemm_applies(bad, res));
}

// A MatMulGroup step (RMS normalization, then Q / K / V or gate / up) with the group GEMM forced,
// against the CPU plan.
TEST(GpuGroupGemm, MatMulGroupStepMatchesTheCpu) {
  SRT_REQUIRE_GPU();
  const testing::GroupSpec specs[] = {
      {.x = {2, 96, 512}, .n = {256, 128, 128}},
      {.x = {2, 96, 512}, .n = {256, 128, 128}, .bias = true},
      {.x = {150, 256}, .n = {384, 384}, .gate = true},
      // Q and K rotated in the epilogue (heads of 64 and 128; the tables' rows repeat per batch).
      {.x = {2, 96, 512}, .n = {512, 256, 256}, .rotary = 64},
      {.x = {3, 50, 256}, .n = {256, 128, 128}, .bias = true, .rotary = 128},
  };
  for (GroupGemmKernel kernel : {GroupGemmKernel::kGroup, GroupGemmKernel::kCublasLt})
    for (DataType precision : {DataType::kFloat16, DataType::kBFloat16})
      for (const testing::GroupSpec& spec : specs) {
        if (kernel == GroupGemmKernel::kCublasLt && spec.rotary == 0) continue;  // GpuMatMulGroup's
        RuntimeOptions ro;
        ro.group_gemm_kernel = kernel;
        const std::string what = std::string(dtype_name(precision)) + (spec.gate ? " gate up" : " qkv") +
                                 (spec.rotary ? " rotary " + std::to_string(spec.rotary) : "") +
                                 (kernel == GroupGemmKernel::kGroup ? " group GEMM" : " cuBLASLt");
        const ir::Graph graph = testing::group_graph(spec);
        auto cuda = testing::build_graph_plan(graph, DeviceType::kCuda, true, precision, false);
        auto cpu = testing::build_graph_plan(graph, DeviceType::kCpu, true, precision, false);
        ASSERT_TRUE(cuda.ok() && cpu.ok()) << what;
        const auto in = testing::block_inputs(graph, 5);
        auto got = testing::run_graph_plan(DeviceType::kCuda, *cuda, in, ro);
        auto want = testing::run_graph_plan(DeviceType::kCpu, *cpu, in);
        ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
        ASSERT_TRUE(want.ok()) << what << ": " << want.status().to_string();
        testing::expect_close(*got, *want, testing::tolerance(precision), what);
      }
}

}  // namespace
}  // namespace streamrt::cuda
