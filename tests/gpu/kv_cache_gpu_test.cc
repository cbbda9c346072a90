// The in-place KV cache on CUDA (ctest label `gpu`; skips without a CUDA device): KvAppend's CUDA
// kernel (pitched copies: new rows only when present is past's buffer, past rows first otherwise)
// and Attention reading K / V at the capacity stride, against the CPU kernels over the dense plan;
// and the transformers corpus's decode loops built in place on the GPU against PyTorch's logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "../unit/decode_loop_util.h"
#include "../unit/kv_cache_test_util.h"
#include "gpu_test_util.h"

namespace streamrt::testing {
namespace {

void expect_near(const Tensor& got, const Tensor& want, float atol, float rtol, const std::string& what) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  const std::vector<float> g = got.to_float_vector().value(), w = want.to_float_vector().value();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], atol + rtol * std::abs(w[i])) << what << " " << i;
}

// float32 with head size 8 (the simple kernel) and float16 with 64 (the tensor-core kernel, staging K / V
// tiles from the capacity-strided cache).
class GpuKvCacheTypes : public ::testing::TestWithParam<TinyKv> {
 protected:
  void SetUp() override { SRT_REQUIRE_GPU(); }
};

TEST_P(GpuKvCacheTypes, TinyDecodeMatchesTheCpuDensePlan) {
  const TinyKv t = GetParam();
  const bool half = t.dtype == DataType::kFloat16;
  auto dense = build_tiny_kv(DeviceType::kCpu, false, nullptr, t);
  ASSERT_TRUE(dense.ok()) << dense.status().to_string();
  auto want = run_tiny_decode(DeviceType::kCpu, *dense, CacheBinding::kHostRoundTrip, t);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  BuildReport rep;
  auto in_place = build_tiny_kv(DeviceType::kCuda, true, &rep, t);
  ASSERT_TRUE(in_place.ok()) << in_place.status().to_string();
  EXPECT_EQ(rep.kv_pairs_in_place, 2u);
  for (CacheBinding b : {CacheBinding::kOneBuffer, CacheBinding::kTwoBuffers, CacheBinding::kHostRoundTrip}) {
    SCOPED_TRACE("binding " + std::to_string(static_cast<int>(b)));
    auto got = run_tiny_decode(DeviceType::kCuda, *in_place, b, t);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->ys.size(), want->ys.size());
    for (size_t s = 0; s < want->ys.size(); ++s)
      expect_near(got->ys[s], want->ys[s], half ? 2e-3f : 1e-5f, half ? 1e-2f : 1e-4f, "y of step " + std::to_string(s));
    for (const auto& [name, t] : want->presents) {  // copies: exact
      const Tensor& g = got->presents.at(name);
      ASSERT_EQ(g.dims(), t.dims()) << name;
      EXPECT_EQ(std::memcmp(g.data(), t.data(), t.nbytes()), 0) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GpuKvCacheTypes,
                         ::testing::Values(TinyKv{DataType::kFloat32, 8}, TinyKv{DataType::kFloat16, 64}),
                         [](const auto& info) { return std::string(dtype_name(info.param.dtype)) + "_d" +
                                                       std::to_string(info.param.dim); });

class GpuDecodeLoop : public ::testing::TestWithParam<DecodeLoopParam> {
 protected:
  void SetUp() override { SRT_REQUIRE_GPU(); }
};

TEST_P(GpuDecodeLoop, PresentsFedBackMatchFullSequenceForward) { run_decode_loop(GetParam(), DeviceType::kCuda); }

INSTANTIATE_TEST_SUITE_P(Exports, GpuDecodeLoop,
                         ::testing::Values(DecodeLoopParam{"dynamo", false}, DecodeLoopParam{"dynamo", false, true},
                                           DecodeLoopParam{"torchscript", false, true},
                                           DecodeLoopParam{"dynamo", true, true}),
                         decode_loop_name);

}  // namespace
}  // namespace streamrt::testing
