// Attention's own masking (ops/attention.h): key_mask (padding, left and right), the sliding
// window and what a row left without keys gets, on the CPU kernel against a loop written here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compute_test_util.h"
#include "ops/attention.h"

namespace streamrt::testing {
namespace {

using ir::Attribute;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Masks {
  Dims key_dims;                  // [Bk, Sk]; empty = no key_mask
  std::vector<int64_t> keys;      // row-major, nonzero = the key takes part
  bool causal = false;
  int64_t window = 0;
  float fill = -std::numeric_limits<float>::infinity();
  bool nan_to_zero = false;
};

// Q [B, H, Sq, D], K / V [B, H, Skv, D]: the softmax over the keys each row keeps; a row keeping
// none is V's mean over all keys with a finite fill, else NaN (0 with nan_to_zero).
std::vector<double> reference(const Dims& qd, int64_t skv, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, float scale, const Masks& m) {
  const int64_t b_n = qd[0], h_n = qd[1], sq = qd[2], d = qd[3];
  std::vector<double> y;
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t h = 0; h < h_n; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        const int64_t at = i + skv - sq, base = (b * h_n + h) * skv;
        std::vector<double> s(static_cast<size_t>(skv), -kInf);
        double mx = -kInf;
        for (int64_t j = 0; j < skv; ++j) {
          bool keep = !m.causal || j <= at;
          keep = keep && (m.window == 0 || at - j < m.window);
          if (!m.key_dims.empty()) keep = keep && m.keys[(m.key_dims[0] == 1 ? 0 : b) * m.key_dims[1] + j] != 0;
          if (!keep) continue;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += double(q[((b * h_n + h) * sq + i) * d + c]) * k[(base + j) * d + c];
          s[j] = scale * dot;
          mx = std::max(mx, s[j]);
        }
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0, sum = 0;
          for (int64_t j = 0; j < skv; ++j) {
            const double p = mx == -kInf ? 1.0 : std::exp(s[j] - mx);
            sum += p;
            acc += p * v[(base + j) * d + c];
          }
          const bool none = mx == -kInf;
          y.push_back(none && std::isinf(m.fill) ? (m.nan_to_zero ? 0.0 : std::nan("")) : acc / sum);
        }
      }
  return y;
}

ir::Node node_with(const Masks& m, float scale) {
  std::map<std::string, Attribute> attrs = {{"scale", Attribute::make_float(scale)}};
  if (m.causal) attrs["causal"] = Attribute::make_int(1);
  if (m.window) attrs["window"] = Attribute::make_int(m.window);
  if (!std::isinf(m.fill)) attrs["mask_fill"] = Attribute::make_float(m.fill);
  if (m.nan_to_zero) attrs["nan_to_zero"] = Attribute::make_int(1);
  return make_node("Attention", m.key_dims.empty() ? 3 : 5, 1, attrs);
}

Tensor key_tensor(const Masks& m, DataType t) {
  if (t == DataType::kBool || t == DataType::kUInt8) {
    std::vector<uint8_t> b(m.keys.begin(), m.keys.end());
    return Tensor::from_vector(t, m.key_dims, b);
  }
  if (t == DataType::kInt32) return Tensor::from_vector(t, m.key_dims, std::vector<int32_t>(m.keys.begin(), m.keys.end()));
  return i64(m.key_dims, m.keys);
}

// Runs Attention with `m` on random Q, K, V and compares with the reference loop.
void check(const Dims& qd, int64_t skv, const Masks& m, DataType key_type = DataType::kInt64) {
  const Dims kd = {qd[0], qd[1], skv, qd[3]};
  auto q = random_values(numel(qd), 11), k = random_values(numel(kd), 12), v = random_values(numel(kd), 13);
  for (auto& x : q) x *= 3;
  const float scale = 0.5f;
  std::vector<Tensor> ins = {f32(qd, q), f32(kd, k), f32(kd, v)};
  if (!m.key_dims.empty()) ins.insert(ins.end(), {Tensor(), key_tensor(m, key_type)});
  auto out = run_ok(node_with(m, scale), ins);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), qd);
  auto want = reference(qd, skv, q, k, v, scale, m);
  auto got = values_f32(out[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t e = 0; e < got.size(); ++e) {
    if (std::isnan(want[e])) EXPECT_TRUE(std::isnan(got[e])) << "element " << e;
    else EXPECT_NEAR(got[e], want[e], 1e-5 + 1e-4 * std::abs(want[e])) << "element " << e;
  }
}

TEST(AttentionMasks, KeyMaskLeavesOutPaddedKeysLeftAndRight) {
  // Batch 0 padded on the left (decoder), batch 1 on the right (encoder), batch 2 not at all.
  Masks m{.key_dims = {3, 6}, .keys = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1}};
  check({3, 2, 6, 4}, 6, m);
  m.causal = true;
  check({3, 2, 6, 4}, 6, m);
  check({3, 2, 2, 4}, 6, m);  // two new queries against a cache of four
}

TEST(AttentionMasks, KeyMaskOfAnyIntegerTypeOrBool) {
  const Masks m{.key_dims = {2, 5}, .keys = {1, 0, 1, 1, 0, 0, 1, 1, 1, 1}, .causal = true};
  for (DataType t : {DataType::kBool, DataType::kUInt8, DataType::kInt32, DataType::kInt64}) check({2, 2, 5, 4}, 5, m, t);
  // 256 as int64 is nonzero, whatever its low byte says.
  Masks big = m;
  big.keys = {256, 0, 1, 1 << 20, 0, 0, int64_t{1} << 40, 1, 1, 1};
  check({2, 2, 5, 4}, 5, big);
}

TEST(AttentionMasks, KeyMaskOneRowForAllAndLongerRows) {
  check({2, 2, 3, 4}, 5, Masks{.key_dims = {1, 5}, .keys = {1, 1, 0, 1, 1}});
  // Rows past the batch and columns past Skv are not read (a mask over more positions).
  Masks m{.key_dims = {3, 7}, .keys = {1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 9, 9, 1, 1, 1, 1, 1, 1, 1}};
  auto q = random_values(2 * 2 * 3 * 4, 1), k = random_values(2 * 2 * 5 * 4, 2), v = random_values(2 * 2 * 5 * 4, 3);
  auto got = values_f32(run_ok(node_with(m, 0.5f), {f32({2, 2, 3, 4}, q), f32({2, 2, 5, 4}, k), f32({2, 2, 5, 4}, v),
                                                     Tensor(), key_tensor(m, DataType::kInt64)})[0]);
  Masks first{.key_dims = {2, 5}, .keys = {1, 0, 1, 1, 1, 0, 1, 1, 1, 1}};
  auto want = reference({2, 2, 3, 4}, 5, q, k, v, 0.5f, first);
  for (size_t e = 0; e < got.size(); ++e) EXPECT_NEAR(got[e], want[e], 1e-5) << e;
}

TEST(AttentionMasks, SlidingWindowKeepsTheLastWindowKeys) {
  check({1, 2, 9, 4}, 9, Masks{.causal = true, .window = 3});
  check({1, 2, 2, 4}, 9, Masks{.causal = true, .window = 4});   // decode: the window ends at the cache's end
  check({2, 2, 9, 4}, 9, Masks{.window = 2});                   // without causal: only the lower bound
  check({2, 2, 9, 4}, 9, Masks{.key_dims = {2, 9}, .keys = {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                              .causal = true, .window = 2});
}

TEST(AttentionMasks, RowWithoutKeysIsMeanOfVWithFiniteFillElseNaNOrZero) {
  // Left padding of 3 under causal: queries 0..2 keep no key.
  Masks m{.key_dims = {1, 5}, .keys = {0, 0, 0, 1, 1}, .causal = true};
  check({1, 2, 5, 4}, 5, m);  // NaN
  m.nan_to_zero = true;
  check({1, 2, 5, 4}, 5, m);  // 0
  m.nan_to_zero = false;
  m.fill = -3.4028234663852886e38f;
  check({1, 2, 5, 4}, 5, m);  // every key's score is the fill in the unfused graph: uniform
  // The mean of V exactly, by hand: V = 1..4 down the keys in every column.
  std::vector<float> v;
  for (int j = 0; j < 4; ++j)
    for (int c = 0; c < 2; ++c) v.push_back(static_cast<float>(j + 1));
  Masks all_out{.key_dims = {1, 4}, .keys = {0, 0, 0, 0}, .fill = -1e9f};
  auto y = values_f32(run_ok(node_with(all_out, 1.f), {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 4, 2}, random_values(8, 4)),
                                                       f32({1, 1, 4, 2}, v), Tensor(), key_tensor(all_out, DataType::kInt64)})[0]);
  for (float x : y) EXPECT_FLOAT_EQ(x, 2.5f);
}

TEST(AttentionMasks, ShapeRuleAndErrors) {
  const DataType f = DataType::kFloat32;
  auto err = [](ir::Node n, std::vector<InInfo> ins) {
    auto r = infer_only(n, std::move(ins));
    return r.ok() ? StatusCode::kOk : r.status().code();
  };
  ir::Node n = make_node("Attention", 5);
  const InInfo q{f, {2, 4, 3, 8}}, kv{f, {2, 4, 6, 8}}, none{DataType::kUndefined, {}};
  EXPECT_EQ(err(n, {q, kv, kv, none, {DataType::kInt64, {2, 6}}}), StatusCode::kOk);
  EXPECT_EQ(err(n, {q, kv, kv, none, {DataType::kBool, {-1, -1}}}), StatusCode::kOk);
  EXPECT_EQ(err(n, {q, kv, kv, none, {DataType::kInt64, {1, 9}}}), StatusCode::kOk);
  EXPECT_EQ(err(n, {q, kv, kv, none, {DataType::kInt64, {12}}}), StatusCode::kInvalidModel);    // rank 1
  EXPECT_EQ(err(n, {q, kv, kv, none, {DataType::kInt64, {2, 5}}}), StatusCode::kInvalidModel);  // fewer keys
  EXPECT_EQ(err(n, {{f, {3, 4, 3, 8}}, {f, {3, 4, 6, 8}}, {f, {3, 4, 6, 8}}, none, {DataType::kInt64, {2, 6}}}),
            StatusCode::kInvalidModel);  // 2 rows for 3 batches
  EXPECT_EQ(err(n, {q, kv, kv, none, {f, {2, 6}}}), StatusCode::kUnsupported);  // ONNX's past_key
  ir::Node w = make_node("Attention", 3, 1, {{"window", Attribute::make_int(-1)}});
  EXPECT_EQ(err(w, {q, kv, kv}), StatusCode::kInvalidModel);
  // The kernel checks static dims too (a plan can be edited by hand).
  auto r = ops::evaluate_on_host(n, {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 3, 2}, random_values(6, 1)),
                                     f32({1, 1, 3, 2}, random_values(6, 2)), Tensor(), i64({1, 2}, {1, 1})});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace streamrt::testing
