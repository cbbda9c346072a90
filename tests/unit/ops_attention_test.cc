// Attention (the fused op): CPU kernel against a naive loop written here, shape rule, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compute_test_util.h"
#include "ops/attention.h"
#include "ops/common.h"

namespace streamrt::testing {
namespace {

using ir::Attribute;

// x (dims) expanded to `to` by numpy broadcasting, written out by index arithmetic.
std::vector<double> expand(const std::vector<float>& x, const Dims& dims, const Dims& to) {
  std::vector<double> out(static_cast<size_t>(numel(to)));
  const size_t r = to.size(), off = r - dims.size();
  for (int64_t e = 0; e < numel(to); ++e) {
    int64_t rem = e, src = 0, mult = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t idx = rem % to[d];
      rem /= to[d];
      if (d >= off) {
        const int64_t n = dims[d - off];
        src += (n == 1 ? 0 : idx) * mult;
        mult *= n;
      }
    }
    out[static_cast<size_t>(e)] = x[static_cast<size_t>(src)];
  }
  return out;
}

struct Case {
  Dims q, k, v, mask;  // mask empty = none (set has_mask for a scalar mask)
  bool has_mask = false, bool_mask = false, causal = false;
  float scale = 0.5f;
  float mask_fill = -std::numeric_limits<float>::infinity();
};

// softmax(scale * Q K^T + mask, causal) V in double, inputs broadcast to `lead` first.
std::vector<double> reference(const Case& c, const Dims& lead, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& mask) {
  const int64_t sq = c.q[c.q.size() - 2], d = c.q.back(), skv = c.k[c.k.size() - 2], dv = c.v.back();
  auto full = [&](int64_t a, int64_t b) { Dims f = lead; f.push_back(a); f.push_back(b); return f; };
  auto Q = expand(q, c.q, full(sq, d)), K = expand(k, c.k, full(skv, d)), V = expand(v, c.v, full(skv, dv));
  std::vector<double> M;
  if (c.has_mask) M = expand(mask, c.mask, full(sq, skv));
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> y;
  for (int64_t b = 0; b < numel(lead); ++b)
    for (int64_t i = 0; i < sq; ++i) {
      std::vector<double> s(static_cast<size_t>(skv));
      double mx = -inf;
      for (int64_t j = 0; j < skv; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < d; ++x) dot += Q[(b * sq + i) * d + x] * K[(b * skv + j) * d + x];
        double sc = c.scale * dot;
        if (c.has_mask) {
          const double m = M[(b * sq + i) * skv + j];
          sc = c.bool_mask ? (m != 0 ? sc : c.mask_fill) : sc + m;
        }
        if (c.causal && j > i + skv - sq) sc = -inf;
        s[j] = sc;
        mx = std::max(mx, sc);
      }
      double sum = 0;
      for (auto& e : s) sum += (e = std::exp(e - mx));
      for (int64_t x = 0; x < dv; ++x) {
        double acc = 0;
        for (int64_t j = 0; j < skv; ++j) acc += s[j] * V[(b * skv + j) * dv + x];
        y.push_back(acc / sum);
      }
    }
  return y;
}

ir::Node attention_node(const Case& c, bool k_transposed = false, bool with_scale = true) {
  std::map<std::string, Attribute> attrs;
  if (with_scale) attrs["scale"] = Attribute::make_float(c.scale);
  if (c.causal) attrs["causal"] = Attribute::make_int(1);
  if (k_transposed) attrs["k_transposed"] = Attribute::make_int(1);
  if (!std::isinf(c.mask_fill)) attrs["mask_fill"] = Attribute::make_float(c.mask_fill);
  return make_node("Attention", c.has_mask ? 4 : 3, 1, attrs);
}

// [.., S, D] -> [.., D, S] of a float vector.
std::vector<float> swap_last_two(const std::vector<float>& x, const Dims& dims) {
  const int64_t r = dims[dims.size() - 2], c = dims.back();
  std::vector<float> out(x.size());
  for (int64_t b = 0; b < numel(dims) / (r * c); ++b)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) out[(b * c + j) * r + i] = x[(b * r + i) * c + j];
  return out;
}

void check(const Case& c, DataType dtype = DataType::kFloat32, bool k_transposed = false, uint32_t seed = 1) {
  auto q = rounded(dtype, random_values(numel(c.q), seed));
  auto k = rounded(dtype, random_values(numel(c.k), seed + 1));
  auto v = rounded(dtype, random_values(numel(c.v), seed + 2));
  for (auto& x : q) x *= 3;  // scores of a few units: the softmax is far from uniform
  q = rounded(dtype, q);
  std::vector<float> mask;
  if (c.has_mask) {
    mask = random_values(numel(c.mask), seed + 3);
    for (auto& m : mask) m = c.bool_mask ? (m > -0.6f ? 1.f : 0.f) : 2 * m;
    if (!c.bool_mask) mask = rounded(dtype, mask);
  }
  Dims lead;
  for (const Dims* x : {&c.q, &c.k, &c.v}) lead = ops::broadcast_dims(lead, Dims(x->begin(), x->end() - 2)).value();
  if (c.mask.size() > 2) lead = ops::broadcast_dims(lead, Dims(c.mask.begin(), c.mask.end() - 2)).value();
  auto want = reference(c, lead, q, k, v, mask);
  Dims kdims = c.k;
  if (k_transposed) std::swap(kdims[kdims.size() - 1], kdims[kdims.size() - 2]);
  std::vector<Tensor> ins = {float_tensor(dtype, c.q, q),
                             float_tensor(dtype, kdims, k_transposed ? swap_last_two(k, c.k) : k),
                             float_tensor(dtype, c.v, v)};
  if (c.has_mask) {
    std::vector<uint8_t> bytes(mask.begin(), mask.end());
    ins.push_back(c.bool_mask ? Tensor::from_vector(DataType::kBool, c.mask, bytes) : float_tensor(dtype, c.mask, mask));
  }
  auto out = run_ok(attention_node(c, k_transposed), ins);
  ASSERT_EQ(out.size(), 1u);
  Dims want_dims = lead;
  want_dims.push_back(c.q[c.q.size() - 2]);
  want_dims.push_back(c.v.back());
  EXPECT_EQ(out[0].dims(), want_dims);
  EXPECT_EQ(out[0].dtype(), dtype);
  expect_close(values_f32(out[0]), std::vector<float>(want.begin(), want.end()), dtype);
}

TEST(Attention, MatchesNaiveLoop) { check({.q = {2, 3, 5, 4}, .k = {2, 3, 7, 4}, .v = {2, 3, 7, 6}}); }

TEST(Attention, SingleQueryAgainstLongCache) { check({.q = {1, 2, 1, 8}, .k = {1, 2, 77, 8}, .v = {1, 2, 77, 8}}); }

TEST(Attention, CausalSquareAndBottomRightAligned) {
  check({.q = {2, 2, 6, 4}, .k = {2, 2, 6, 4}, .v = {2, 2, 6, 3}, .causal = true});
  check({.q = {1, 2, 3, 4}, .k = {1, 2, 7, 4}, .v = {1, 2, 7, 5}, .causal = true});  // offset 4
}

TEST(Attention, AdditiveMaskBroadcasts) {
  check({.q = {2, 3, 5, 4}, .k = {2, 3, 7, 4}, .v = {2, 3, 7, 4}, .mask = {1, 1, 5, 7}, .has_mask = true});
  check({.q = {2, 3, 5, 4}, .k = {2, 3, 7, 4}, .v = {2, 3, 7, 4}, .mask = {2, 1, 1, 7}, .has_mask = true});
  check({.q = {2, 3, 5, 4}, .k = {2, 3, 7, 4}, .v = {2, 3, 7, 4}, .mask = {7}, .has_mask = true});
  // A mask with more leading dims than Q widens the output, as Add would.
  check({.q = {3, 5, 4}, .k = {3, 7, 4}, .v = {3, 7, 4}, .mask = {2, 1, 5, 7}, .has_mask = true});
}

TEST(Attention, AdditiveMaskWithCausal) {
  check({.q = {1, 2, 6, 4}, .k = {1, 2, 6, 4}, .v = {1, 2, 6, 4}, .mask = {6, 6}, .has_mask = true, .causal = true});
}

TEST(Attention, BoolMaskKeepsTrueEntries) {
  check({.q = {2, 2, 5, 4}, .k = {2, 2, 7, 4}, .v = {2, 2, 7, 3}, .mask = {5, 7}, .has_mask = true, .bool_mask = true});
}

TEST(Attention, MaskFillReplacesMaskedScoresAsWhereDoes) {
  // Row 1 is masked entirely: with a finite fill its weights are uniform, so it is V's mean.
  Case c{.q = {1, 3, 2}, .k = {1, 4, 2}, .v = {1, 4, 2}, .mask = {3, 4}, .has_mask = true, .bool_mask = true,
         .mask_fill = -1e4f};
  std::vector<float> keep = {1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0};
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  auto q = random_values(6, 1), k = random_values(8, 2);
  auto want = reference(c, {1}, q, k, v, keep);
  std::vector<uint8_t> kb(keep.begin(), keep.end());
  auto out = run_ok(attention_node(c), {f32(c.q, q), f32(c.k, k), f32(c.v, v), Tensor::from_vector(DataType::kBool, c.mask, kb)});
  ASSERT_EQ(out.size(), 1u);
  auto y = values_f32(out[0]);
  EXPECT_NEAR(y[2], 4.f, 1e-5f);  // (1 + 3 + 5 + 7) / 4
  EXPECT_NEAR(y[3], 5.f, 1e-5f);
  EXPECT_NEAR(y[4], 3.f, 1e-6f);  // row 2 keeps key 1 only
  EXPECT_NEAR(y[5], 4.f, 1e-6f);
  expect_close(y, std::vector<float>(want.begin(), want.end()));
}

TEST(Attention, LeadingDimsBroadcast) {
  check({.q = {2, 3, 4, 8}, .k = {1, 3, 6, 8}, .v = {3, 6, 5}});  // K and V shared across the batch
  check({.q = {4, 8}, .k = {2, 6, 8}, .v = {6, 8}});              // only K has a batch
}

TEST(Attention, TransposedKGivesTheSameResult) {
  check({.q = {2, 3, 5, 4}, .k = {2, 3, 7, 4}, .v = {2, 3, 7, 6}}, DataType::kFloat32, true);
  check({.q = {1, 2, 4, 8}, .k = {1, 2, 4, 8}, .v = {1, 2, 4, 8}, .causal = true}, DataType::kFloat32, true);
}

TEST(Attention, HalfTypesComputeInFloat) {
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    check({.q = {2, 2, 9, 16}, .k = {2, 2, 13, 16}, .v = {2, 2, 13, 16}, .causal = true}, t);
    check({.q = {1, 2, 9, 16}, .k = {1, 2, 13, 16}, .v = {1, 2, 13, 8}, .mask = {1, 1, 9, 13}, .has_mask = true}, t);
  }
}

TEST(Attention, ScaleDefaultsToInverseSqrtOfHeadDim) {
  Case c{.q = {1, 1, 3, 16}, .k = {1, 1, 5, 16}, .v = {1, 1, 5, 2}, .scale = 0.25f};
  auto q = random_values(48, 7), k = random_values(80, 8), v = random_values(10, 9);
  auto want = reference(c, {1, 1}, q, k, v, {});
  auto out = run_ok(attention_node(c, false, false), {f32(c.q, q), f32(c.k, k), f32(c.v, v)});
  ASSERT_EQ(out.size(), 1u);
  expect_close(values_f32(out[0]), std::vector<float>(want.begin(), want.end()));
}

TEST(Attention, RowWithoutKeysIsNaNAsSoftmaxGives) {
  // Causal with Sq > Skv: the first Sq - Skv queries see no key.
  Case c{.q = {1, 4, 2}, .k = {1, 2, 2}, .v = {1, 2, 3}, .causal = true};
  auto out = run_ok(attention_node(c), {f32(c.q, random_values(8, 1)), f32(c.k, random_values(4, 2)),
                                        f32(c.v, {1, 2, 3, 4, 5, 6})});
  auto y = values_f32(out[0]);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
  EXPECT_FLOAT_EQ(y[6], 1.f);  // query 2 sees key 0 only
  EXPECT_FLOAT_EQ(y[8], 3.f);
  for (int i = 9; i < 12; ++i) EXPECT_FALSE(std::isnan(y[i]));
}

TEST(Attention, NoKeysGivesZeros) {
  Case c{.q = {1, 2, 4}, .k = {1, 0, 4}, .v = {1, 0, 3}};
  auto out = run_ok(attention_node(c), {f32(c.q, random_values(8, 1)), f32(c.k, {}), f32(c.v, {})});
  EXPECT_EQ(values_f32(out[0]), std::vector<float>(6, 0.f));
}

TEST(Attention, ShapeRuleKeepsDynamicDims) {
  ir::Node n = make_node("Attention", 4, 1, {{"k_transposed", Attribute::make_int(1)}});
  auto outs = infer_only(n, {{DataType::kFloat16, {-1, 4, -1, 64}},
                             {DataType::kFloat16, {-1, 4, 64, -1}},
                             {DataType::kFloat16, {-1, 4, -1, 64}},
                             {DataType::kBool, {1, 1, -1, -1}}});
  ASSERT_TRUE(outs.ok()) << outs.status().to_string();
  EXPECT_EQ((*outs)[0].dtype, DataType::kFloat16);
  EXPECT_EQ((*outs)[0].dims, (Dims{-1, 4, -1, 64}));
  auto unranked = infer_only(make_node("Attention", 3), {{DataType::kFloat32, {2, 3, 4}},
                                                         {DataType::kFloat32, {}, false},
                                                         {DataType::kFloat32, {2, 5, 4}}});
  ASSERT_TRUE(unranked.ok());
  EXPECT_FALSE((*unranked)[0].has_shape);
}

TEST(Attention, BadShapesAndTypesAreErrors) {
  auto err = [](ir::Node n, std::vector<InInfo> ins) {
    auto r = infer_only(n, std::move(ins));
    return r.ok() ? StatusCode::kOk : r.status().code();
  };
  const DataType f = DataType::kFloat32;
  ir::Node n3 = make_node("Attention", 3), n4 = make_node("Attention", 4);
  EXPECT_EQ(err(n3, {{f, {2, 5, 4}}, {f, {2, 7, 3}}, {f, {2, 7, 4}}}), StatusCode::kInvalidModel);  // D differs
  EXPECT_EQ(err(n3, {{f, {2, 5, 4}}, {f, {2, 7, 4}}, {f, {2, 6, 4}}}), StatusCode::kInvalidModel);  // Skv differs
  EXPECT_EQ(err(n3, {{f, {2, 5, 4}}, {f, {3, 7, 4}}, {f, {2, 7, 4}}}), StatusCode::kInvalidModel);  // batch
  EXPECT_EQ(err(n3, {{f, {4}}, {f, {7, 4}}, {f, {7, 4}}}), StatusCode::kInvalidModel);              // rank 1
  EXPECT_EQ(err(n4, {{f, {2, 5, 4}}, {f, {2, 7, 4}}, {f, {2, 7, 4}}, {f, {5, 6}}}), StatusCode::kInvalidModel);
  EXPECT_EQ(err(n4, {{f, {2, 5, 4}}, {f, {2, 7, 4}}, {f, {2, 7, 4}}, {DataType::kInt64, {5, 7}}}),
            StatusCode::kInvalidModel);
  EXPECT_EQ(err(n3, {{f, {2, 5, 4}}, {DataType::kFloat16, {2, 7, 4}}, {f, {2, 7, 4}}}), StatusCode::kInvalidModel);
  EXPECT_EQ(err(n3, {{DataType::kInt32, {2, 5, 4}}, {DataType::kInt32, {2, 7, 4}}, {DataType::kInt32, {2, 7, 4}}}),
            StatusCode::kUnsupported);
  ir::Node bad = n3;
  bad.attrs["causal"] = Attribute::make_int(2);
  EXPECT_EQ(err(bad, {{f, {2, 5, 4}}, {f, {2, 7, 4}}, {f, {2, 7, 4}}}), StatusCode::kInvalidModel);
  // The kernel itself checks too (a plan can be edited by hand).
  auto r = ops::evaluate_on_host(n3, {f32({1, 2, 2}, {1, 2, 3, 4}), f32({1, 3, 3}, std::vector<float>(9, 1.f)),
                                      f32({1, 3, 2}, std::vector<float>(6, 1.f))});
  EXPECT_FALSE(r.ok());
}

TEST(Attention, OnnxAttentionFeaturesAreRefusedNotMisread) {
  const DataType f = DataType::kFloat32;
  std::vector<InInfo> ins = {{f, {1, 2, 5, 4}}, {f, {1, 2, 7, 4}}, {f, {1, 2, 7, 4}}};
  for (auto [key, attr] : std::vector<std::pair<std::string, Attribute>>{
           {"is_causal", Attribute::make_int(1)}, {"q_num_heads", Attribute::make_int(2)},
           {"kv_num_heads", Attribute::make_int(2)}, {"softcap", Attribute::make_float(30.f)},
           {"qk_matmul_output_mode", Attribute::make_int(1)}}) {
    ir::Node n = make_node("Attention", 3, 1, {{key, attr}});
    auto r = infer_only(n, ins);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported) << key;
    EXPECT_NE(r.status().message().find(key), std::string::npos) << r.status().message();
  }
  // past_key / past_value inputs and the present_* outputs.
  auto past = infer_only(make_node("Attention", 6), {ins[0], ins[1], ins[2], {}, {f, {1, 2, 3, 4}}, {f, {1, 2, 3, 4}}});
  EXPECT_EQ(past.status().code(), StatusCode::kUnsupported);
  auto present = infer_only(make_node("Attention", 3, 3), ins);
  EXPECT_EQ(present.status().code(), StatusCode::kUnsupported);
}

}  // namespace
// [B, X, Y, D] -> [B, Y, X, D] of a float vector.
std::vector<float> swap_middle(const std::vector<float>& x, const Dims& d) {
  std::vector<float> out(x.size());
  for (int64_t b = 0; b < d[0]; ++b)
    for (int64_t i = 0; i < d[1]; ++i)
      for (int64_t j = 0; j < d[2]; ++j)
        for (int64_t c = 0; c < d[3]; ++c)
          out[((b * d[2] + j) * d[1] + i) * d[3] + c] = x[((b * d[1] + i) * d[2] + j) * d[3] + c];
  return out;
}

// Every combination of [B, S, H, D] inputs and output gives exactly the [B, H, S, D] result
// (the same arithmetic, other addresses), with and without K^T, causal and an additive mask.
TEST(Attention, BshdLayoutsReadAndWriteInPlace) {
  const Dims q = {2, 3, 5, 8}, k = {2, 3, 7, 8}, v = {2, 3, 7, 6}, mask = {2, 1, 5, 7};
  auto qv = random_values(numel(q), 21), kv = random_values(numel(k), 22), vv = random_values(numel(v), 23);
  auto mv = random_values(numel(mask), 24);
  auto bshd = [](const Dims& d) { return Dims{d[0], d[2], d[1], d[3]}; };
  for (bool kt : {false, true}) {
    Case c{.q = q, .k = k, .v = v, .causal = true};
    c.has_mask = true;
    c.mask = mask;
    const Dims kdims = kt ? Dims{2, 3, 8, 7} : k;
    const std::vector<float> kin = kt ? swap_last_two(kv, k) : kv;
    auto base = run_ok(attention_node(c, kt), {f32(q, qv), f32(kdims, kin), f32(v, vv), f32(mask, mv)});
    const std::vector<float> want = values_f32(base[0]);
    for (int bits = 1; bits < 16; ++bits) {
      if (kt && (bits & ops::kBshdK)) continue;
      SCOPED_TRACE("k_transposed " + std::to_string(kt) + ", bshd " + std::to_string(bits));
      ir::Node n = attention_node(c, kt);
      n.attrs["bshd"] = Attribute::make_int(bits);
      std::vector<Tensor> ins = {
          bits & ops::kBshdQ ? f32(bshd(q), swap_middle(qv, q)) : f32(q, qv),
          bits & ops::kBshdK ? f32(bshd(k), swap_middle(kv, k)) : f32(kdims, kin),
          bits & ops::kBshdV ? f32(bshd(v), swap_middle(vv, v)) : f32(v, vv), f32(mask, mv)};
      auto out = run_ok(n, ins);
      const Dims ylogical = {2, 3, 5, 6};
      EXPECT_EQ(out[0].dims(), bits & ops::kBshdY ? bshd(ylogical) : ylogical);
      const std::vector<float> got =
          bits & ops::kBshdY ? swap_middle(values_f32(out[0]), bshd(ylogical)) : values_f32(out[0]);
      EXPECT_EQ(got, want);
    }
  }
  ir::Node bad = make_node("Attention", 3, 1, {{"bshd", Attribute::make_int(16)}});
  EXPECT_FALSE(ops::evaluate_on_host(bad, {f32(q, qv), f32(k, kv), f32(v, vv)}).ok());
  bad.attrs["bshd"] = Attribute::make_int(ops::kBshdK);
  bad.attrs["k_transposed"] = Attribute::make_int(1);
  EXPECT_FALSE(ops::evaluate_on_host(bad, {f32(q, qv), f32({2, 3, 8, 7}, kv), f32(v, vv)}).ok());
  bad = make_node("Attention", 3, 1, {{"bshd", Attribute::make_int(ops::kBshdQ)}});
  EXPECT_FALSE(ops::evaluate_on_host(bad, {f32({3, 5, 8}, qv), f32({3, 7, 8}, kv), f32({3, 7, 6}, vv)}).ok());
}

// [B, Hkv, S, D] with every head repeated `group` times in place: [B, Hkv * group, S, D].
std::vector<float> repeat_heads(const std::vector<float>& x, const Dims& d, int64_t group) {
  const int64_t per_head = d[2] * d[3];
  std::vector<float> out;
  for (int64_t b = 0; b < d[0]; ++b)
    for (int64_t h = 0; h < d[1]; ++h)
      for (int64_t r = 0; r < group; ++r) {
        auto first = x.begin() + (b * d[1] + h) * per_head;
        out.insert(out.end(), first, first + per_head);
      }
  return out;
}

TEST(Attention, KvGroupReadsEachKeyValueHeadForItsQueryHeads) {
  // Grouped (2 of 4 heads, bshd K and V too) and multi-query (1 of 4): equal bit for bit to the same
  // op on K and V repeated per query head, which is what exporters' repeat_kv computes.
  const Dims q = {2, 4, 5, 8};
  for (int64_t kv_heads : {2, 1}) {
    const int64_t group = 4 / kv_heads;
    const Dims k = {2, kv_heads, 7, 8}, v = {2, kv_heads, 7, 6};
    SCOPED_TRACE("kv heads " + std::to_string(kv_heads));
    auto qv = random_values(numel(q), 31), kv = random_values(numel(k), 32), vv = random_values(numel(v), 33);
    Case c{.q = q, .k = k, .v = v, .causal = true};
    auto want = run_ok(attention_node(c), {f32(q, qv), f32({2, 4, 7, 8}, repeat_heads(kv, k, group)),
                                           f32({2, 4, 7, 6}, repeat_heads(vv, v, group))});
    ir::Node n = attention_node(c);
    n.attrs["kv_group"] = Attribute::make_int(group);
    auto got = run_ok(n, {f32(q, qv), f32(k, kv), f32(v, vv)});
    EXPECT_EQ(got[0].dims(), (Dims{2, 4, 5, 6}));
    EXPECT_EQ(values_f32(got[0]), values_f32(want[0]));
    n.attrs["bshd"] = Attribute::make_int(ops::kBshdK | ops::kBshdV);
    auto bshd = [](const Dims& d) { return Dims{d[0], d[2], d[1], d[3]}; };
    got = run_ok(n, {f32(q, qv), f32(bshd(k), swap_middle(kv, k)), f32(bshd(v), swap_middle(vv, v))});
    EXPECT_EQ(values_f32(got[0]), values_f32(want[0]));
  }
  // 4 query heads cannot share 2 stored heads in groups of 3; kv_group < 1 is refused.
  ir::Node bad = make_node("Attention", 3, 1, {{"kv_group", Attribute::make_int(3)}});
  auto qv = random_values(numel(q), 1), kv = random_values(2 * 2 * 7 * 8, 2), full = random_values(2 * 4 * 7 * 8, 3);
  EXPECT_FALSE(ops::evaluate_on_host(bad, {f32(q, qv), f32({2, 2, 7, 8}, kv), f32({2, 2, 7, 8}, kv)}).ok());
  bad.attrs["kv_group"] = Attribute::make_int(2);
  EXPECT_TRUE(ops::evaluate_on_host(bad, {f32(q, qv), f32({2, 2, 7, 8}, kv), f32({2, 2, 7, 8}, kv)}).ok());
  bad.attrs["kv_group"] = Attribute::make_int(0);
  EXPECT_FALSE(ops::evaluate_on_host(bad, {f32(q, qv), f32({2, 4, 7, 8}, full), f32({2, 4, 7, 8}, full)}).ok());
}

TEST(Attention, NanToZeroWritesZeroForRowsWithoutKeys) {
  // Row 1 masks every key with -inf: Softmax gives NaN there, and Where(IsNaN(p), 0, p) then 0.
  Case c{.q = {1, 3, 2}, .k = {1, 4, 2}, .v = {1, 4, 2}, .mask = {3, 4}, .has_mask = true, .bool_mask = true};
  std::vector<uint8_t> keep = {1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0};
  const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  auto q = random_values(6, 1), k = random_values(8, 2);
  std::vector<Tensor> ins = {f32(c.q, q), f32(c.k, k), f32(c.v, v), Tensor::from_vector(DataType::kBool, c.mask, keep)};
  auto plain = values_f32(run_ok(attention_node(c), ins)[0]);
  EXPECT_TRUE(std::isnan(plain[2]) && std::isnan(plain[3]));
  ir::Node n = attention_node(c);
  n.attrs["nan_to_zero"] = Attribute::make_int(1);
  auto y = values_f32(run_ok(n, ins)[0]);
  EXPECT_EQ(y[2], 0.f);
  EXPECT_EQ(y[3], 0.f);
  for (int i : {0, 1, 4, 5}) EXPECT_EQ(y[i], plain[i]);  // other rows unchanged
  n.attrs["nan_to_zero"] = Attribute::make_int(2);
  EXPECT_FALSE(ops::evaluate_on_host(n, ins).ok());
}

TEST(Attention, SaturatedMaskFillSwampsTheScoreAsInFloat32) {
  // An fp16 build saturates the exporters' fill (float32 lowest) to -65504: a row masked entirely with
  // it averages V uniformly, as the float32 graph (score + lowest == lowest) does, whatever the scores.
  Case c{.q = {1, 2, 2}, .k = {1, 3, 2}, .v = {1, 3, 2}, .mask = {2, 3}, .has_mask = true};
  const std::vector<float> q = {3, -2, 1, 1}, k = {1, 2, -3, 0.5f, 2, 2}, v = {1, 2, 3, 4, 5, 6};
  const std::vector<float> mask = {-65504, -65504, -65504, 0, -65504, 0};
  for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
    auto y = values_f32(run_ok(attention_node(c), {float_tensor(t, c.q, q), float_tensor(t, c.k, k),
                                                   float_tensor(t, c.v, v), float_tensor(t, c.mask, mask)})[0]);
    EXPECT_NEAR(y[0], 3.f, 1e-3f);  // (1 + 3 + 5) / 3
    EXPECT_NEAR(y[1], 4.f, 1e-3f);
    EXPECT_GT(y[2], 1.f);  // row 1 keeps keys 0 and 2: an ordinary softmax between them
    EXPECT_LT(y[2], 5.f);
  }
}

}  // namespace streamrt::testing
