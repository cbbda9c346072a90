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

class GpuKvCache : public ::testing::Test {
 protected:
  void SetUp() override { SRT_REQUIRE_GPU(); }
};

void expect_near(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  const float* g = got.data_as<float>();
  const float* w = want.data_as<float>();
  for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(g[i], w[i], 1e-5f + 1e-4f * std::abs(w[i])) << what << " " << i;
}

TEST_F(GpuKvCache, TinyDecodeMatchesTheCpuDensePlan) {
  auto dense = build_tiny_kv(DeviceType::kCpu, false);
  ASSERT_TRUE(dense.ok());
  auto want = run_tiny_decode(DeviceType::kCpu, *dense, CacheBinding::kHostRoundTrip);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  BuildReport rep;
  auto in_place = build_tiny_kv(DeviceType::kCuda, true, &rep);
  ASSERT_TRUE(in_place.ok()) << in_place.status().to_string();
  EXPECT_EQ(rep.kv_pairs_in_place, 2u);
  for (CacheBinding b : {CacheBinding::kOneBuffer, CacheBinding::kTwoBuffers, CacheBinding::kHostRoundTrip}) {
    SCOPED_TRACE("binding " + std::to_string(static_cast<int>(b)));
    auto got = run_tiny_decode(DeviceType::kCuda, *in_place, b);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->ys.size(), want->ys.size());
    for (size_t s = 0; s < want->ys.size(); ++s) expect_near(got->ys[s], want->ys[s], "y of step " + std::to_string(s));
    for (const auto& [name, t] : want->presents) {  // copies: exact
      const Tensor& g = got->presents.at(name);
      ASSERT_EQ(g.dims(), t.dims()) << name;
      EXPECT_EQ(std::memcmp(g.data(), t.data(), t.nbytes()), 0) << name;
    }
  }
}

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
