// GPU tests of the few-row half-precision products (kernels/half_gemv.cu for one row,
// kernels/few_row_gemm.cu for two to eight; skip without a CUDA device): float16 and bfloat16, K
// from a few rows to more than all row lanes' eight loads (odd K and A at an odd element offset
// for one row; K not a multiple of a stage, shorter than one, for more), N not a multiple of the
// 64-column tile, K split over a cluster and not, with and without a bias and a residual, against a
// double-precision product of the same rounded operands. What the kernels do not take is refused
// (kUnsupported), never computed wrong.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cuda/kernels/half_gemv.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace streamrt::cuda {
namespace {

struct Case {
  DataType dtype;
  int64_t rows, k, n;
  bool bias;
  bool residual = false;
  int cols = 0, split = 0, slots = 0;  // few-row launch shape (0: the kernel's choice)
};

using testing::from_bits;
using testing::to_bits;

using testing::random_half;

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
};

// The GEMV of one weight, as MatMul runs it.
HalfGemv one_weight(DataType t, int64_t rows, int64_t k, int64_t n, const void* a, const void* w, void* y) {
  HalfGemv g;
  g.dtype = t;
  g.rows = rows;
  g.k = k;
  g.a = a;
  g.part[0] = {w, nullptr, y, n};
  return g;
}

using testing::device_resources;

void run_case(const Case& c) {
  SCOPED_TRACE(std::string(c.dtype == DataType::kFloat16 ? "float16" : "bfloat16") + " rows " +
               std::to_string(c.rows) + " k " + std::to_string(c.k) + " n " + std::to_string(c.n) +
               (c.bias ? " bias" : "") + " shape " + std::to_string(c.cols) + "/" + std::to_string(c.split) + "/" +
               std::to_string(c.slots));
  std::vector<double> a, w, b;
  const auto a_bits = random_half(static_cast<size_t>(c.rows * c.k), 1.f, c.dtype, 1, &a);
  const auto w_bits = random_half(static_cast<size_t>(c.k * c.n), 1.f / std::sqrt(float(c.k)), c.dtype, 2, &w);
  const auto b_bits = random_half(static_cast<size_t>(c.n), 1.f, c.dtype, 3, &b);
  std::vector<double> rv;
  const auto r_bits = random_half(static_cast<size_t>(c.rows * c.n), 1.f, c.dtype, 5, &rv);
  // One row: A one element past an aligned address (the GEMV reads it by elements); more rows read
  // it in 16-byte runs.
  DeviceBuffer da(a_bits.size() * 2 + 2), dw(w_bits.size() * 2), db(b_bits.size() * 2), dy(size_t(c.rows * c.n) * 2);
  void* a_at = static_cast<char*>(da.p) + (c.rows == 1 ? 2 : 0);
  ASSERT_EQ(cudaMemcpy(a_at, a_bits.data(), a_bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dw.p, w_bits.data(), w_bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.p, b_bits.data(), b_bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  // The residual is read from y itself (an in-place step); else y starts as NaNs where nothing is written.
  if (c.residual) ASSERT_EQ(cudaMemcpy(dy.p, r_bits.data(), r_bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  else ASSERT_EQ(cudaMemset(dy.p, 0xFF, size_t(c.rows * c.n) * 2), cudaSuccess);

  CudaResources res = device_resources();
  HalfGemv g = one_weight(c.dtype, c.rows, c.k, c.n, a_at, dw.p, dy.p);
  g.part[0].bias = c.bias ? db.p : nullptr;
  g.residual = c.residual ? dy.p : nullptr;
  g.cols = c.cols, g.split = c.split, g.slots = c.slots;
  ASSERT_TRUE(half_gemv_applies(g, res.cc_major));
  const Status st = half_gemv(res, g);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> y_bits(size_t(c.rows * c.n));
  ASSERT_EQ(cudaMemcpy(y_bits.data(), dy.p, y_bits.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);

  // The output is rounded once to the type: half an ulp of it (2^-11 / 2^-8 relative), plus float
  // accumulation error.
  const double rtol = c.dtype == DataType::kFloat16 ? 1e-3 : 8e-3;
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t j = 0; j < c.n; ++j) {
      double want = (c.bias ? b[j] : 0.0) + (c.residual ? rv[r * c.n + j] : 0.0);
      for (int64_t i = 0; i < c.k; ++i) want += a[r * c.k + i] * w[i * c.n + j];
      const double got = from_bits(y_bits[r * c.n + j], c.dtype);
      ASSERT_NEAR(got, want, rtol * (1.0 + std::fabs(want))) << "row " << r << " column " << j;
    }
}

TEST(GpuHalfGemv, MatchesDoubleProduct) {
  SRT_REQUIRE_GPU();
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    run_case({t, 1, 8, 8, false});
    run_case({t, 1, 3, 72, true});
    run_case({t, 1, 2048, 520, true});  // a partial last column tile
    run_case({t, 1, 4099, 24, false});  // more than eight loads a row lane, some past K
    run_case({t, 1, 2048, 2048, false});
    run_case({t, 1, 8192, 2056, true});
    run_case({t, 1, 2048, 520, true, true});  // a residual, read from the output's own memory
    run_case({t, 1, 2048, 34000, true});  // enough column tiles to fill the GPU: K whole in a block
    run_case({t, 1, 16384, 64, false});  // eight chunks of the largest size
  }
}

TEST(GpuHalfGemv, FewRowsMatchDoubleProduct) {
  SRT_REQUIRE_GPU();
  if (device_resources().cc_major < 8) GTEST_SKIP() << "the few-row kernel needs sm_80";
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    run_case({t, 2, 64, 64, false});
    run_case({t, 7, 8, 8, true});       // K shorter than one stage
    run_case({t, 8, 2048, 520, true});  // a partial last column tile, K split over a cluster
    run_case({t, 3, 4104, 24, false});  // K not a multiple of a stage
    run_case({t, 8, 2048, 2048, false});
    run_case({t, 5, 8192, 2056, true});
    run_case({t, 8, 2048, 520, true, true});  // a residual, read from the output's own memory
    run_case({t, 4, 2048, 34000, true});      // enough column tiles to fill the GPU: K whole in a block
    run_case({t, 8, 16384, 64, false});       // eight chunks of the largest size
    // Launch shapes set by hand: wider column tiles (a partial last one), deeper and shallower rings.
    run_case({t, 8, 2048, 520, true, false, 128, 4, 3});
    run_case({t, 6, 4104, 264, false, false, 256, 3, 2});
    run_case({t, 8, 8192, 2056, true, true, 256, 8, 6});
    run_case({t, 2, 1000, 72, false, false, 64, 1, 10});
  }
}

TEST(GpuHalfGemv, RefusesWhatItDoesNotTake) {
  SRT_REQUIRE_GPU();
  CudaResources res = device_resources();
  auto refused = [&](HalfGemv g) {
    EXPECT_FALSE(half_gemv_applies(g, res.cc_major));
    EXPECT_EQ(half_gemv(res, g).code(), StatusCode::kUnsupported);
  };
  DeviceBuffer buf(1 << 20);
  void* d = buf.p;
  refused(one_weight(DataType::kFloat32, 1, 64, 64, d, d, d));                          // float32
  refused(one_weight(DataType::kFloat16, 9, 64, 64, d, d, d));                          // more than eight rows (cuBLASLt's)
  refused(one_weight(DataType::kFloat16, 2, 60, 64, d, d, d));                          // rows of A not 16-byte runs
  refused(one_weight(DataType::kFloat16, 2, 64, 64, static_cast<char*>(d) + 2, d, d));  // A misaligned (two rows)
  refused(one_weight(DataType::kFloat16, 1, 64, 60, d, d, d));                          // N not a multiple of 8
  refused(one_weight(DataType::kFloat16, 1, 64, 64, d, static_cast<char*>(d) + 2, d));  // W misaligned
  HalfGemv two = one_weight(DataType::kFloat16, 1, 64, 64, d, d, d);
  two.parts = 2;
  two.part[1] = {d, nullptr, d, 64};
  two.residual = d;
  refused(two);  // a residual with two weights
  two.residual = nullptr;
  two.gate = true;
  two.part[1].n = 128;
  refused(two);  // a gate of two widths
  HalfGemv rot = one_weight(DataType::kFloat16, 1, 64, 256, d, d, d);
  rot.rotary_dim = 128;
  rot.part[0].cos = rot.part[0].sin = d;
  rot.part[0].table_rows = 1;
  refused(rot);  // heads of 128 across the GEMV's 64-column blocks (MatMulGroup rotates after it)
  rot.rows = 2;
  rot.rotary_dim = 48;
  refused(rot);  // heads no block width holds whole
  rot.rotary_dim = 64;
  rot.residual = d;
  refused(rot);  // a rotation with a residual
}

}  // namespace
}  // namespace streamrt::cuda
