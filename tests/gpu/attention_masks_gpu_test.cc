// GPU tests of Attention's own masking (key_mask, window, causal, a row without keys; ops/attention.h)
// in both CUDA kernels (ctest label `gpu`; every test skips, saying why, without a CUDA device):
// each case runs on CUDA and on the CPU kernel from the same one-node plan and must agree.
// float16 / bfloat16 with head dims 64 and 128 take the tensor-core kernel (per-tile key flags,
// tiles skipped before the window or without a kept key, the mean of V for rows without keys);
// float32 and other head dims the warp-per-row kernel.
#include <gtest/gtest.h>

#include <cmath>

#include "../unit/conv_test_util.h"
#include "gpu_test_util.h"

namespace streamrt {
namespace {

struct Case {
  DataType dtype = DataType::kFloat16;
  int64_t batch = 3, heads = 4, kv_heads = 2, sq = 130, skv = 130, d = 64;
  bool causal = true;
  int64_t window = 0;
  float fill = -INFINITY;
  bool nan_to_zero = true;
  bool key_mask = true;
};

std::string describe(const Case& c) {
  return std::string(dtype_name(c.dtype)) + " sq " + std::to_string(c.sq) + " skv " + std::to_string(c.skv) + " d " +
         std::to_string(c.d) + " causal " + std::to_string(c.causal) + " window " + std::to_string(c.window) +
         " fill " + std::to_string(c.fill) + " key_mask " + std::to_string(c.key_mask);
}

// One Attention node over graph inputs Q, K, V (and key_mask): batch 0 padded on the left by
// 70 keys, batch 1 on the right by 45, batch 2 (and more) not at all.
ir::Graph attention_graph(const Case& c) {
  ir::Graph g;
  g.name = "attention_masks";
  const ir::ValueId q = g.add_value("Q", c.dtype, {c.batch, c.heads, c.sq, c.d}, true);
  const ir::ValueId k = g.add_value("K", c.dtype, {c.batch, c.kv_heads, c.skv, c.d}, true);
  const ir::ValueId v = g.add_value("V", c.dtype, {c.batch, c.kv_heads, c.skv, c.d}, true);
  g.inputs = {q, k, v};
  ir::Node n = testing::graph_node("Attention", {q, k, v}, {g.add_value("Y")});
  if (c.key_mask) {
    const ir::ValueId km = g.add_value("key_mask", DataType::kInt64, {c.batch, c.skv}, true);
    g.inputs.push_back(km);
    n.inputs.insert(n.inputs.end(), {ir::kNoValue, km});
  }
  n.attrs["kv_group"] = ir::Attribute::make_int(c.heads / c.kv_heads);
  if (c.causal) n.attrs["causal"] = ir::Attribute::make_int(1);
  if (c.window) n.attrs["window"] = ir::Attribute::make_int(c.window);
  if (std::isfinite(c.fill)) n.attrs["mask_fill"] = ir::Attribute::make_float(c.fill);
  if (c.nan_to_zero) n.attrs["nan_to_zero"] = ir::Attribute::make_int(1);
  g.outputs = {n.outputs[0]};
  g.nodes.push_back(std::move(n));
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

std::map<std::string, Tensor> inputs(const ir::Graph& g, const Case& c) {
  std::map<std::string, Tensor> in;
  uint32_t seed = 5;
  for (const char* name : {"Q", "K", "V"}) {
    const ir::Value& val = g.value(g.find_value(name));
    in[name] = testing::random_tensor(c.dtype, val.dims, seed++, std::string(name) == "Q" ? 2.f : 1.f);
  }
  if (c.key_mask) {
    std::vector<int64_t> keys(static_cast<size_t>(c.batch * c.skv), 1);
    for (int64_t j = 0; j < std::min<int64_t>(70, c.skv); ++j) keys[static_cast<size_t>(j)] = 0;
    for (int64_t j = std::max<int64_t>(0, c.skv - 45); j < c.skv && c.batch > 1; ++j)
      keys[static_cast<size_t>(c.skv + j)] = 0;
    in["key_mask"] = Tensor::from_vector(DataType::kInt64, {c.batch, c.skv}, keys);
  }
  return in;
}

void check(const Case& c) {
  SCOPED_TRACE(describe(c));
  const ir::Graph g = attention_graph(c);
  auto gpu_plan = testing::build_graph_plan(g, DeviceType::kCuda, true, DataType::kFloat32, false);
  auto cpu_plan = testing::build_graph_plan(g, DeviceType::kCpu, true);
  ASSERT_TRUE(gpu_plan.ok() && cpu_plan.ok()) << gpu_plan.status().to_string() << cpu_plan.status().to_string();
  const auto in = inputs(g, c);
  auto got = testing::run_graph_plan(DeviceType::kCuda, std::move(gpu_plan).value(), in);
  auto want = testing::run_graph_plan(DeviceType::kCpu, std::move(cpu_plan).value(), in);
  ASSERT_TRUE(got.ok() && want.ok()) << got.status().to_string() << want.status().to_string();
  const auto a = got->to_float_vector().value(), b = want->to_float_vector().value();
  ASSERT_EQ(a.size(), b.size());
  const double tol = c.dtype == DataType::kFloat32 ? 1e-4 : c.dtype == DataType::kFloat16 ? 4e-3 : 3e-2;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = std::isnan(b[i]) ? std::isnan(a[i]) : std::fabs(double(a[i]) - b[i]) <= tol * (1 + std::fabs(b[i]));
    if (!same && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << bad << " of " << a.size() << " differ, first #" << first << ": " << a[first] << " on CUDA, "
                     << b[first] << " on the CPU";
}

TEST(AttentionMasksGpu, TensorCoreKernelKeyMaskCausalWindow) {
  SRT_REQUIRE_GPU();
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16})
    for (int64_t d : {64, 128}) {
      check({.dtype = t, .d = d});                                  // prefill, left and right padding
      check({.dtype = t, .sq = 3, .skv = 200, .d = d});             // decode-like: few queries, a long cache
      // ... a window far inside a longer cache: key ranges start at the window, none counted twice
      check({.dtype = t, .sq = 3, .skv = 3000, .d = d, .window = 700});
      check({.dtype = t, .sq = 200, .skv = 200, .d = d, .window = 50});
      check({.dtype = t, .sq = 150, .skv = 260, .d = d, .window = 70, .key_mask = false});
      check({.dtype = t, .d = d, .causal = false});                 // padding only (an encoder)
    }
}

// Where a row sees 4096 keys on average head size 64 takes the Hopper kernel's three-consumer blocks
// (192 query rows), else two: the padding, causal limit and window across row tiles that do not
// divide the length, on both.
TEST(AttentionMasksGpu, LongHead64KeyMaskCausalWindow) {
  SRT_REQUIRE_GPU();
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    check({.dtype = t, .batch = 2, .heads = 2, .kv_heads = 1, .sq = 4200, .skv = 4200, .window = 700});
    check({.dtype = t, .batch = 2, .heads = 2, .kv_heads = 1, .sq = 4100, .skv = 4100, .causal = false});
    check({.dtype = t, .batch = 1, .heads = 1, .kv_heads = 1, .sq = 8300, .skv = 8300});
  }
}

TEST(AttentionMasksGpu, RowsWithoutKeysMatchTheCpu) {
  SRT_REQUIRE_GPU();
  // Left padding of 70 under causal: the first 70 queries of batch 0 keep no key.
  for (DataType t : {DataType::kFloat16, DataType::kFloat32}) {
    check({.dtype = t, .fill = -3.4028234663852886e38f});  // the mean of V
    check({.dtype = t, .fill = -INFINITY, .nan_to_zero = true});
    check({.dtype = t, .fill = -INFINITY, .nan_to_zero = false});  // NaN in both
  }
}

TEST(AttentionMasksGpu, WarpPerRowKernel) {
  SRT_REQUIRE_GPU();
  check({.dtype = DataType::kFloat32, .d = 32});
  check({.dtype = DataType::kFloat32, .sq = 2, .skv = 150, .d = 64, .window = 40});
  check({.dtype = DataType::kFloat16, .d = 48, .window = 30});  // a head dim the tensor-core kernel does not take
}

}  // namespace
}  // namespace streamrt
