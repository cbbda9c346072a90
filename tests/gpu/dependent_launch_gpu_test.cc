// GPU test of programmatic dependent launch (kernels/dependent_launch.cuh, RuntimeOptions::
// programmatic_launch): a chain of one- and few-row products on one stream, each reading the output
// of the one before (a read after write) and writing the buffer the one before read (a write after
// read), with and without a residual read from its own output. Launched as dependent launches the
// chain must give the same bits as launched the usual way, run after run: a kernel that touched its
// operands before waiting for the step ahead would read stale rows or clobber them. Skips without a
// GPU, and on GPUs before sm_90 (the option changes nothing there).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cuda/cuda_run_options.h"
#include "backends/cuda/kernels/half_gemv.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace streamrt::cuda {
namespace {

struct Buffer {
  void* p = nullptr;
  explicit Buffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~Buffer() { cudaFree(p); }
};

constexpr int64_t kK = 2048;   // every product K x K, so an output is the next product's A
constexpr int kSteps = 24;     // products in the chain
constexpr int kWeights = 4;    // the chain cycles through them

// Runs the chain once from `x0` with `options`, returns the last output's bits.
std::vector<uint16_t> run_chain(CudaResources& res, const RuntimeOptions& options, int64_t rows,
                                const std::vector<uint16_t>& x0, const std::vector<Buffer*>& w, Buffer& a, Buffer& b) {
  RunOptionsScope scope(options);
  const size_t bytes = size_t(rows * kK) * 2;
  EXPECT_EQ(cudaMemcpy(a.p, x0.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(b.p, 0, bytes), cudaSuccess);
  Buffer* in = &a;
  Buffer* out = &b;
  for (int s = 0; s < kSteps; ++s) {
    HalfGemv g;
    g.dtype = DataType::kFloat16;
    g.rows = rows;
    g.k = kK;
    g.a = in->p;
    g.part[0] = {w[static_cast<size_t>(s % kWeights)]->p, nullptr, out->p, kK};
    // Every third step adds the residual it reads from its own output (the previous round's values).
    g.residual = s % 3 == 2 ? out->p : nullptr;
    EXPECT_TRUE(half_gemv_applies(g, res.cc_major));
    const Status st = half_gemv(res, g);
    EXPECT_TRUE(st.ok()) << st.to_string();
    std::swap(in, out);
  }
  EXPECT_EQ(cudaStreamSynchronize(res.stream), cudaSuccess);
  std::vector<uint16_t> y(size_t(rows * kK));
  EXPECT_EQ(cudaMemcpy(y.data(), in->p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return y;
}

TEST(GpuDependentLaunch, ChainedProductsMatchUsualLaunchesBitForBit) {
  SRT_REQUIRE_GPU();
  CudaResources res = testing::device_resources();
  if (res.cc_major < 9) GTEST_SKIP() << "programmatic dependent launch needs sm_90";
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  res.stream = stream;
  RuntimeOptions usual, dependent;
  usual.programmatic_launch = false;
  dependent.programmatic_launch = true;
  std::vector<Buffer*> w;
  for (int i = 0; i < kWeights; ++i) {
    std::vector<double> unused;
    // Uniform in +-sqrt(3 / K): a product keeps its input's spread, so 24 of them neither vanish nor overflow.
    const auto bits = testing::random_half(size_t(kK * kK), std::sqrt(3.f / float(kK)), DataType::kFloat16, 10 + i,
                                           &unused);
    w.push_back(new Buffer(bits.size() * 2));
    ASSERT_EQ(cudaMemcpy(w.back()->p, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  for (int64_t rows : {1, 8}) {  // the one-row GEMV, the few-row tensor-core kernel
    SCOPED_TRACE("rows " + std::to_string(rows));
    std::vector<double> unused;
    const auto x0 = testing::random_half(size_t(rows * kK), 1.f, DataType::kFloat16, 3, &unused);
    Buffer a(x0.size() * 2), b(x0.size() * 2);
    const std::vector<uint16_t> want = run_chain(res, usual, rows, x0, w, a, b);
    int finite = 0, normal = 0;  // exponent bits: all ones (inf / NaN), none (zero / subnormal)
    for (uint16_t v : want) finite += (v & 0x7C00u) != 0x7C00u, normal += (v & 0x7C00u) != 0;
    ASSERT_EQ(finite, static_cast<int>(want.size())) << "the chain overflowed: the comparison would prove little";
    ASSERT_GT(normal, static_cast<int>(want.size()) * 9 / 10) << "the chain vanished: the comparison would prove little";
    for (int run = 0; run < 5; ++run) {
      const std::vector<uint16_t> got = run_chain(res, dependent, rows, x0, w, a, b);
      size_t differ = 0;
      for (size_t i = 0; i < want.size(); ++i) differ += got[i] != want[i];
      ASSERT_EQ(differ, 0u) << "run " << run << ": " << differ << " of " << want.size() << " outputs differ";
    }
  }
  for (Buffer* p : w) delete p;
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
}  // namespace streamrt::cuda
