// GPU tests of the fused Attention op's tensor-core kernel (ctest label `gpu`; every test skips, saying
// why, without a CUDA device): one Attention node, built and run on CUDA, against the op's CPU kernel on
// the same float16 / bfloat16 inputs. The cases reach the kernel's launch choices: grouped-query heads
// packed into one block's rows (fewer than 64 query rows), keys split into ranges joined by a second
// kernel (few blocks, long keys: decode), head dims 64 / 128 / 256, long prefills of many row tiles, masks
// and fully masked rows under a split, both layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../unit/conv_test_util.h"
#include "../unit/op_test_util.h"
#include "core/float16.h"
#include "gpu_test_util.h"
#include "ops/common.h"

namespace streamrt {
namespace {

struct Case {
  int64_t b = 1, h = 8, hkv = 2, d = 64, sq = 1, skv = 700;
  bool causal = true, bshd = true, mask = false, nan_to_zero = false;
  DataType dtype = DataType::kFloat16;
  AttentionKernel kernel = AttentionKernel::kAuto;
  std::string describe() const {
    return "b" + std::to_string(b) + " h" + std::to_string(h) + "/" + std::to_string(hkv) + " d" + std::to_string(d) +
           " sq" + std::to_string(sq) + " skv" + std::to_string(skv) + (causal ? " causal" : "") +
           (bshd ? " bshd" : " bhsd") + (mask ? " mask" : "") + (nan_to_zero ? " nan_to_zero" : "") + " " +
           dtype_name(dtype) + " kernel " + attention_kernel_name(kernel);
  }
};

Dims layout(const Case& c, int64_t heads, int64_t s) { return c.bshd ? Dims{c.b, s, heads, c.d} : Dims{c.b, heads, s, c.d}; }

Tensor random_tensor(DataType dt, const Dims& dims, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  int64_t n = 1;
  for (int64_t x : dims) n *= x;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  if (dt == DataType::kFloat16) return Tensor::from_vector(dt, dims, std::vector<Half>(v.begin(), v.end()));
  if (dt == DataType::kBFloat16) return Tensor::from_vector(dt, dims, std::vector<BFloat16>(v.begin(), v.end()));
  return Tensor::from_vector(dt, dims, v);
}

// An additive [B, 1, Sq, Skv] mask: 0 or the exporters' float32 lowest, with row 0 of batch 0 fully masked
// (the nan_to_zero row) and random holes elsewhere.
Tensor make_mask(const Case& c, std::mt19937& rng) {
  std::vector<float> v(static_cast<size_t>(c.b * c.sq * c.skv), 0.f);
  std::uniform_int_distribution<int> coin(0, 4);
  for (size_t e = 0; e < v.size(); ++e)
    if (coin(rng) == 0) v[e] = std::numeric_limits<float>::lowest();
  for (int64_t j = 0; j < c.skv; ++j) v[static_cast<size_t>(j)] = std::numeric_limits<float>::lowest();
  const std::vector<Half> h(v.begin(), v.end());
  if (c.dtype == DataType::kFloat16) return Tensor::from_vector(c.dtype, {c.b, 1, c.sq, c.skv}, h);
  return Tensor::from_vector(c.dtype, {c.b, 1, c.sq, c.skv}, std::vector<BFloat16>(v.begin(), v.end()));
}

void check(const Case& c) {
  const std::string what = c.describe();
  std::mt19937 rng(static_cast<unsigned>(c.sq * 131 + c.skv * 7 + c.d));
  std::vector<Tensor> in = {random_tensor(c.dtype, layout(c, c.h, c.sq), rng),
                            random_tensor(c.dtype, layout(c, c.hkv, c.skv), rng),
                            random_tensor(c.dtype, layout(c, c.hkv, c.skv), rng)};
  if (c.mask) in.push_back(make_mask(c, rng));
  std::map<std::string, ir::Attribute> attrs = {{"kv_group", ir::Attribute::make_int(c.h / c.hkv)}};
  if (c.causal) attrs["causal"] = ir::Attribute::make_int(1);
  if (c.bshd) attrs["bshd"] = ir::Attribute::make_int(15);
  if (c.nan_to_zero) attrs["nan_to_zero"] = ir::Attribute::make_int(1);
  const ir::Node node = testing::make_node("Attention", in.size(), 1, attrs);
  auto want = ops::evaluate_on_host(node, in);
  ASSERT_TRUE(want.ok()) << what << ": " << want.status().to_string();

  ir::Graph g;
  g.name = "attention";
  ir::Node n = node;
  const char* names[] = {"q", "k", "v", "mask"};
  for (size_t i = 0; i < in.size(); ++i) {
    n.inputs[i] = g.add_value(names[i], in[i].dtype(), in[i].dims(), true);
    g.inputs.push_back(n.inputs[i]);
  }
  n.outputs[0] = g.add_value("y");
  g.outputs.push_back(n.outputs[0]);
  g.nodes.push_back(std::move(n));
  ASSERT_TRUE(ir::infer_shapes(g).ok()) << what;
  auto plan = testing::build_graph_plan(g, DeviceType::kCuda, false);
  ASSERT_TRUE(plan.ok()) << what << ": " << plan.status().to_string();
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < in.size(); ++i) feeds[names[i]] = in[i];
  RuntimeOptions ro;
  ro.attention_kernel = c.kernel;
  auto got = testing::run_graph_plan(DeviceType::kCuda, std::move(*plan), feeds, ro);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();

  const auto a = testing::values_f32(*got), e = testing::values_f32((*want)[0]);
  ASSERT_EQ(a.size(), e.size()) << what;
  // P is rounded to the input type before P V on tensor cores (the CPU keeps it in float32).
  const double tol = c.dtype == DataType::kFloat16 ? 4e-3 : 3e-2;
  size_t bad = 0, nan_rows = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << " element " << i << " should be NaN";
      ++nan_rows;
      continue;
    }
    if (std::fabs(a[i] - e[i]) > tol * (1 + std::fabs(e[i])) && bad++ < 5)
      ADD_FAILURE() << what << " element " << i << ": cuda " << a[i] << " cpu " << e[i];
  }
  if (c.mask && !c.nan_to_zero) {
    EXPECT_GT(nan_rows, 0u) << what << ": the fully masked row should give NaN";
  }
}

class GpuAttention : public ::testing::Test {
 protected:
  void SetUp() override { SRT_REQUIRE_GPU(); }
};

TEST_F(GpuAttention, DecodeSplitsKeysAndPacksGroupedHeads) {
  for (int64_t d : {64, 128, 256})
    for (int64_t skv : {1, 63, 300, 2049}) {
      check({.b = 2, .h = 8, .hkv = 2, .d = d, .sq = 1, .skv = skv});
      check({.b = 1, .h = 4, .hkv = 4, .d = d, .sq = 1, .skv = skv, .bshd = false});  // no groups
    }
  check({.b = 3, .h = 14, .hkv = 2, .d = 64, .sq = 1, .skv = 1500, .dtype = DataType::kBFloat16});
  check({.b = 1, .h = 32, .hkv = 1, .d = 128, .sq = 1, .skv = 4097});  // multi-query
}

TEST_F(GpuAttention, FewQueryRowsAgainstACache) {
  // Bottom-right causal limits differ per packed row (query r / group).
  for (int64_t sq : {2, 5, 17, 40})
    check({.b = 2, .h = 8, .hkv = 2, .d = 64, .sq = sq, .skv = 900});
  check({.b = 1, .h = 8, .hkv = 2, .d = 128, .sq = 7, .skv = 700, .causal = false, .bshd = false});
}

TEST_F(GpuAttention, PrefillAllHeadDims) {
  for (int64_t d : {64, 128, 256})
    for (int64_t s : {65, 200}) check({.b = 2, .h = 4, .hkv = 2, .d = d, .sq = s, .skv = s});
  check({.b = 1, .h = 4, .hkv = 1, .d = 256, .sq = 130, .skv = 130, .dtype = DataType::kBFloat16});
}

// Many 64-row tiles over several packed batches: the blocks run tile-major (the last row tile of every
// batch first), K / V rows go through the per-thread row stagers, and Skv is not a multiple of the key tile.
TEST_F(GpuAttention, LongPrefillManyRowTilesTileMajor) {
  check({.b = 2, .h = 6, .hkv = 3, .d = 64, .sq = 700, .skv = 700});
  check({.b = 1, .h = 4, .hkv = 2, .d = 64, .sq = 300, .skv = 900});  // a prompt after a cache: bottom-right causal
  check({.b = 2, .h = 2, .hkv = 2, .d = 128, .sq = 333, .skv = 333, .causal = false, .bshd = false});
  check({.b = 1, .h = 3, .hkv = 1, .d = 256, .sq = 257, .skv = 257, .dtype = DataType::kBFloat16});
}

// Prefill on sm_90 runs the warpgroup-MMA kernel (attention_wgmma.cu: TMA producer, two consumers),
// elsewhere the mma.sync one; both kernels, chosen through RuntimeOptions, on the same cases at head
// sizes 64 / 128 / 256: both types, full and partial key tiles, a prompt after a cache (bottom-right
// causal), an additive mask with empty rows, and row counts that leave a block's second consumer
// without rows (64, 130); head size 64 below 2048 rows (mma.sync under auto, the warpgroup kernel
// under kWgmma) and at 4100 rows (the warpgroup kernel either way).
TEST_F(GpuAttention, PrefillKernelsAgreeWithTheCpu) {
  for (AttentionKernel k : {AttentionKernel::kAuto, AttentionKernel::kMma, AttentionKernel::kWgmma})
    for (int64_t d : {64, 128, 256}) {
      check({.b = 1, .h = 4, .hkv = 2, .d = d, .sq = 512, .skv = 512, .kernel = k});
      check({.b = 2, .h = 2, .hkv = 1, .d = d, .sq = 64, .skv = 1000, .kernel = k});
      check({.b = 1, .h = 3, .hkv = 3, .d = d, .sq = 300, .skv = 777, .causal = false, .bshd = false,
             .dtype = DataType::kBFloat16, .kernel = k});
      check({.b = 2, .h = 2, .hkv = 2, .d = d, .sq = 200, .skv = 200, .mask = true, .kernel = k});
      check({.b = 1, .h = 2, .hkv = 1, .d = d, .sq = 130, .skv = 130, .mask = true, .nan_to_zero = true,
             .dtype = DataType::kBFloat16, .kernel = k});
    }
  // Head size 64 takes the warpgroup kernel from 2048 query rows, with three consumer warpgroups
  // (192-row blocks) where a row sees 4096 keys on average (the non-causal case); a mask input keeps two.
  for (AttentionKernel k : {AttentionKernel::kAuto, AttentionKernel::kMma}) {
    check({.b = 1, .h = 1, .hkv = 1, .d = 64, .sq = 4100, .skv = 4100, .kernel = k});
    check({.b = 2, .h = 2, .hkv = 1, .d = 64, .sq = 4100, .skv = 4100, .causal = false, .bshd = false,
           .dtype = DataType::kBFloat16, .kernel = k});
  }
  check({.b = 1, .h = 2, .hkv = 2, .d = 64, .sq = 4100, .skv = 4100, .mask = true});
}

// Head sizes 64 and 128 run persistent blocks on sm_90, one an SM taking query tiles in turn: with more
// tiles than SMs (132 on an H200) a block reuses its two Q buffers, its ring slots (their V rows then
// another tile's: each tile's first step reads the zero tile) and its turns across tiles. Two
// consumers (causal, after a cache, an additive mask) and three (a row's reach of 4096 keys or more).
TEST_F(GpuAttention, PersistentBlocksTakeSeveralQueryTiles) {
  check({.b = 2, .h = 8, .hkv = 2, .d = 64, .sq = 2100, .skv = 2100});  // 17 tiles x 16
  check({.b = 2, .h = 8, .hkv = 2, .d = 64, .sq = 2100, .skv = 2600, .bshd = false});
  check({.b = 1, .h = 32, .hkv = 8, .d = 64, .sq = 600, .skv = 600, .mask = true, .kernel = AttentionKernel::kWgmma});
  check({.b = 1, .h = 4, .hkv = 1, .d = 64, .sq = 8200, .skv = 8200, .bshd = false,
         .dtype = DataType::kBFloat16});  // 43 tiles of 192 rows x 4
  check({.b = 1, .h = 7, .hkv = 7, .d = 64, .sq = 4100, .skv = 4100, .causal = false});  // 22 x 7
  // Head size 128 (two consumers, a ring of two slots): 9 tiles x 16, and a mask.
  check({.b = 2, .h = 8, .hkv = 2, .d = 128, .sq = 1100, .skv = 1100});
  check({.b = 1, .h = 32, .hkv = 8, .d = 128, .sq = 600, .skv = 600, .mask = true, .dtype = DataType::kBFloat16});
}

TEST_F(GpuAttention, MasksAndEmptyRowsUnderASplit) {
  check({.b = 2, .h = 8, .hkv = 2, .d = 64, .sq = 1, .skv = 1000, .causal = false, .mask = true});
  check({.b = 2, .h = 8, .hkv = 2, .d = 64, .sq = 1, .skv = 1000, .causal = false, .mask = true,
         .nan_to_zero = true});
  check({.b = 1, .h = 4, .hkv = 2, .d = 128, .sq = 3, .skv = 800, .mask = true, .nan_to_zero = true});
}

}  // namespace
}  // namespace streamrt
