// Weight-only quantization (ops/weight_quant.h, builder/quantize_weights.cc): the quantizer's codes
// against the weights they stand for, the WeightOnlyMatMul CPU kernel against products computed
// here in double from an independent unpacking of the stored codes, and plans built with
// --weight-quant: outputs within the quantization error of the float model, the compressed bytes
// streamed at budget 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/environment.h"
#include "core/float16.h"
#include "op_test_util.h"
#include "quant_test_util.h"
#include "ops/half_gemm.h"
#include "ops/weight_quant.h"
#include "tactics_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

// A float32 or float16 tensor of `v` (float16: rounded).
Tensor make_tensor(DataType t, const Dims& d, const std::vector<float>& v) {
  if (t == DataType::kFloat32) return Tensor::from_vector<float>(t, d, v);
  std::vector<uint16_t> h(v.size());
  floats_to_half(v.data(), h.data(), v.size());
  return Tensor::from_vector<uint16_t>(t, d, h);
}

struct Case {
  int bits;
  int64_t group, m, k, n;
  DataType dtype;
  bool trans, bias;
  bool zeros8 = false;  // 8 bits with zero points (a pre-quantized model's asymmetric codes)
  bool fp8 = false;     // 8 bits as float8 e4m3 codes
};

std::string name_of(const Case& c) {
  return "bits " + std::to_string(c.bits) + " group " + std::to_string(c.group) + " m " + std::to_string(c.m) +
         " k " + std::to_string(c.k) + " n " + std::to_string(c.n) + " " + dtype_name(c.dtype) +
         (c.trans ? " trans" : "") + (c.bias ? " bias" : "") + (c.zeros8 ? " zero points" : "") + (c.fp8 ? " float8" : "");
}

// Groups 16 and 256 too: pre-quantized models' block sizes (--weight-quant writes 32 / 64 / 128).
std::vector<Case> cases() {
  std::vector<Case> out;
  for (DataType t : {DataType::kFloat32, DataType::kFloat16})
    for (auto [bits, group] : {std::pair{8, int64_t{0}}, {4, 16}, {4, 32}, {4, 64}, {4, 128}, {4, 256}}) {
      out.push_back({bits, group, 1, 200, 67, t, false, false});  // K no multiple of any group
      out.push_back({bits, group, 5, 256, 130, t, true, true});
      out.push_back({bits, group, 40, 300, 70, t, false, true});  // the panel (BLAS) path
      out.push_back({bits, group, 3, 1100, 37, t, false, true});  // decode rows over several runs of codes
      if (bits == 8) {
        out.push_back({bits, group, 3, 200, 67, t, false, true, true});
        out.push_back({bits, group, 40, 130, 70, t, true, false, true});
        out.push_back({bits, group, 1, 200, 67, t, false, false, false, true});
        out.push_back({bits, group, 5, 256, 130, t, true, true, false, true});
        out.push_back({bits, group, 40, 300, 70, t, false, true, false, true});
        out.push_back({bits, group, 3, 1100, 37, t, false, true, false, true});
      }
    }
  for (DataType t : {DataType::kFloat32, DataType::kFloat16})
    out.push_back({4, 1024, 2, 1100, 19, t, false, true});  // a group longer than a run of codes (512 bytes > 256)
  return out;
}

// Zero points for 8-bit codes: int8 [N] in [-20, 20], one channel's 0.
Tensor zero_points8(int64_t n) {
  std::vector<float> r = random_floats(static_cast<size_t>(n), 24);
  std::vector<int8_t> z(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) z[j] = static_cast<int8_t>(j == 0 ? 0 : std::lround(r[j] * 20));
  return Tensor::from_vector<int8_t>(DataType::kInt8, {n}, z);
}

TEST(WeightQuant, CodesStayWithinHalfAStepOfTheWeights) {
  for (const Case& c : cases()) {
    if (c.zeros8) continue;  // the quantizer is symmetric; zero points come from models
    SCOPED_TRACE(name_of(c));
    const Dims wd = c.trans ? Dims{c.n, c.k} : Dims{c.k, c.n};
    // Columns of different ranges, one all zero, one all positive: every scale path.
    std::vector<float> wv = random_floats(static_cast<size_t>(c.k * c.n), 11);
    for (int64_t i = 0; i < c.k; ++i) {
      wv[c.trans ? 0 * c.k + i : i * c.n + 0] = 0.f;
      float& pos = wv[c.trans ? 1 * c.k + i : i * c.n + 1];
      pos = std::fabs(pos) * 3 + 0.5f;
    }
    const Tensor w = make_tensor(c.dtype, wd, wv);
    ops::WeightQuantFormat f{c.bits, c.group, c.k, c.n, c.fp8};
    auto q = ops::quantize_weight(w, c.trans, 0, f, "W");
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_EQ(q->packed.dims(), f.packed_dims());
    EXPECT_EQ(q->scales.dtype(), c.dtype);
    const std::vector<double> deq = dequantize_ref(*q, c.bits, c.group, c.k, c.n, c.fp8);
    const std::vector<double> orig = as_doubles(w);
    const std::vector<double> s = as_doubles(q->scales);
    const int64_t groups = c.bits == 4 ? (c.k + c.group - 1) / c.group : 1;
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t i = 0; i < c.k; ++i) {
        const double step = s[c.bits == 4 ? j * groups + i / c.group : j];
        const double wij = orig[c.trans ? j * c.k + i : i * c.n + j];
        // float8: half a step of e4m3 at the weight's magnitude (3 mantissa bits; 2^-9 of the scale
        // below e4m3's normal range).
        const double bound = c.fp8 ? std::max(std::fabs(wij) / 16, step * 0x1p-10) * 1.01 : step * 0.51;
        ASSERT_LE(std::fabs(deq[j * c.k + i] - wij), bound + 1e-7) << "channel " << j << " k " << i;
        if (j == 0) {
          ASSERT_EQ(deq[j * c.k + i], 0.0);  // an all-zero channel stays exactly zero
        }
      }
  }
}

// Both copies of the decode loops (AVX2 + FMA where the CPU has them, and the portable one).
TEST(WeightQuant, KernelMatchesTheDequantizedProductInDouble) {
  struct Restore {  // the binary's choice again, also when an assertion ends the test early
    ~Restore() { ops::set_cpu_simd(!env_switch(std::getenv, "STREAMRT_NO_SIMD")); }
  } restore;
  for (bool simd : {true, false}) {
    for (const Case& c : cases()) {
      SCOPED_TRACE(name_of(c) + (simd ? "" : " portable loops"));
      ops::set_cpu_simd(simd);
      const Dims wd = c.trans ? Dims{c.n, c.k} : Dims{c.k, c.n};
      const Tensor w = make_tensor(c.dtype, wd, random_floats(static_cast<size_t>(c.k * c.n), 21));
      ops::WeightQuantFormat f{c.bits, c.group, c.k, c.n, c.fp8};
      auto q = ops::quantize_weight(w, c.trans, 0, f, "W");
      ASSERT_TRUE(q.ok()) << q.status().to_string();
      if (c.zeros8) q->zeros = zero_points8(c.n);
      const Tensor a = make_tensor(c.dtype, {c.m, c.k}, random_floats(static_cast<size_t>(c.m * c.k), 22));
      const Tensor b = make_tensor(c.dtype, {1, c.n}, random_floats(static_cast<size_t>(c.n), 23));
      ir::Node node = make_node(ops::kWeightOnlyMatMul, c.bias ? 5 : (q->zeros.empty() ? 3 : 4), 1,
                                {{"bits", ir::Attribute::make_int(c.bits)},
                                 {"group", ir::Attribute::make_int(c.group)},
                                 {"K", ir::Attribute::make_int(c.k)},
                                 {"N", ir::Attribute::make_int(c.n)},
                                 {"float8", ir::Attribute::make_int(c.fp8 ? 1 : 0)}});
      std::vector<Tensor> in = {a, q->packed, q->scales};
      if (node.inputs.size() > 3) in.push_back(q->zeros);
      if (q->zeros.empty() && node.inputs.size() > 3) node.inputs[3] = ir::kNoValue;
      if (c.bias) in.push_back(b);
      std::vector<Tensor> out = run_ok(node, in);
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].dims(), (Dims{c.m, c.n}));
      ASSERT_EQ(out[0].dtype(), c.dtype);
      const std::vector<double> deq = dequantize_ref(*q, c.bits, c.group, c.k, c.n, c.fp8);
      const std::vector<double> av = as_doubles(a), bv = as_doubles(b), got = as_doubles(out[0]);
      const double rel = c.dtype == DataType::kFloat32 ? 1e-5 : 2e-3;
      for (int64_t r = 0; r < c.m; ++r)
        for (int64_t j = 0; j < c.n; ++j) {
          double sum = c.bias ? bv[j] : 0, mag = std::fabs(sum);
          for (int64_t i = 0; i < c.k; ++i) {
            sum += av[r * c.k + i] * deq[j * c.k + i];
            mag += std::fabs(av[r * c.k + i] * deq[j * c.k + i]);
          }
          ASSERT_NEAR(got[r * c.n + j], sum, rel * mag + 1e-6) << "row " << r << " column " << j;
        }
    }
  }
}

// A large weight is quantized by several threads, each a share of the columns: its bytes must be
// those of quantizing it a few columns at a time (one thread, other block boundaries).
TEST(WeightQuant, ThreadedQuantizationEqualsNarrowSlices) {
  const int64_t k = 1000, n = 1100;  // above a million elements; n and k no multiple of 32 or a group
  for (DataType t : {DataType::kFloat32, DataType::kFloat16})
    for (bool trans : {false, true})
      for (auto [bits, group] : {std::pair{8, int64_t{0}}, {4, 32}, {4, 128}}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + (trans ? " trans" : "") + " bits " + std::to_string(bits));
        std::vector<float> v = random_floats(static_cast<size_t>(k * n), 31);
        for (int64_t i = 0; i < k; ++i) v[trans ? 700 * k + i : i * n + 700] = 0.f;  // an all-zero channel
        const Tensor w = make_tensor(t, trans ? Dims{n, k} : Dims{k, n}, v);
        const ops::WeightQuantFormat f{bits, group, k, n};
        auto whole = ops::quantize_weight(w, trans, 0, f, "W");
        ASSERT_TRUE(whole.ok()) << whole.status().to_string();
        // Bytes per column of each output.
        const auto row = static_cast<size_t>(f.row_bytes()), groups = static_cast<size_t>(f.groups());
        const size_t scale_bytes = dtype_size(t) * (bits == 4 ? groups : 1);
        auto same = [](const Tensor& part, const Tensor& all, size_t offset, size_t bytes) {
          return std::memcmp(part.data(), all.data_as<uint8_t>() + offset, bytes) == 0;
        };
        for (int64_t n0 = 0; n0 < n; n0 += 7) {
          const int64_t nc = std::min<int64_t>(7, n - n0);
          auto part = ops::quantize_weight(w, trans, n0, {bits, group, k, nc}, "W");
          ASSERT_TRUE(part.ok()) << part.status().to_string();
          const auto c0 = static_cast<size_t>(n0), cn = static_cast<size_t>(nc);
          ASSERT_TRUE(same(part->packed, whole->packed, c0 * row, cn * row)) << "codes of columns " << n0 << "..";
          ASSERT_TRUE(same(part->scales, whole->scales, c0 * scale_bytes, cn * scale_bytes)) << "scales, " << n0;
          if (bits == 4) {
            ASSERT_TRUE(same(part->zeros, whole->zeros, c0 * groups, cn * groups)) << "zero points, " << n0;
          }
        }
      }
}

// The first non-finite element in column order is named, whichever thread finds one first.
TEST(WeightQuant, NamesTheFirstNonFiniteElementOfALargeWeight) {
  const int64_t k = 1024, n = 1024;
  std::vector<float> v = random_floats(static_cast<size_t>(k * n), 5);
  v[3 * n + 1000] = NAN;       // element (3, 1000): a late thread's share
  v[900 * n + 40] = INFINITY;  // element (900, 40): the first column with one
  auto q = ops::quantize_weight(make_tensor(DataType::kFloat32, {k, n}, v), false, 0, {8, 0, k, n}, "Wbig");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("Wbig"), std::string::npos);
  EXPECT_NE(q.status().message().find("element (900, 40)"), std::string::npos) << q.status().message();
}

TEST(WeightQuant, KernelAndShapeRuleRefuseWeightsThatDoNotFitTheFormat) {
  const int64_t k = 64, n = 8;
  const Tensor w = make_tensor(DataType::kFloat32, {k, n}, random_floats(k * n, 1));
  auto q = ops::quantize_weight(w, false, 0, {4, 32, k, n}, "W");
  ASSERT_TRUE(q.ok());
  const Tensor a = make_tensor(DataType::kFloat32, {1, k}, random_floats(k, 2));
  auto attrs = [&](int64_t bits, int64_t group, int64_t kk) {
    return std::map<std::string, ir::Attribute>{{"bits", ir::Attribute::make_int(bits)},
                                                {"group", ir::Attribute::make_int(group)},
                                                {"K", ir::Attribute::make_int(kk)},
                                                {"N", ir::Attribute::make_int(n)}};
  };
  // Group 64 reads the group-32 codes as half as many groups: the scales' dims give it away.
  // Groups are powers of two >= 16.
  for (auto bad : {attrs(4, 64, k), attrs(4, 48, k), attrs(4, 8, k), attrs(4, 0, k), attrs(3, 32, k),
                   attrs(4, 32, k + 32)}) {
    ir::Node node = make_node(ops::kWeightOnlyMatMul, 4, 1, bad);
    auto r = ops::evaluate_on_host(node, {a, q->packed, q->scales, q->zeros});
    EXPECT_FALSE(r.ok());
  }
  ir::Node good = make_node(ops::kWeightOnlyMatMul, 4, 1, attrs(4, 32, k));
  EXPECT_TRUE(ops::evaluate_on_host(good, {a, q->packed, q->scales, q->zeros}).ok());
  const Tensor a_wrong = make_tensor(DataType::kFloat32, {1, k + 1}, random_floats(k + 1, 2));
  EXPECT_FALSE(ops::evaluate_on_host(good, {a_wrong, q->packed, q->scales, q->zeros}).ok());
  // 8-bit zero points are int8 [N]: uint8 or [N, 1] are refused.
  auto q8 = ops::quantize_weight(w, false, 0, {8, 0, k, n}, "W");
  ASSERT_TRUE(q8.ok());
  ir::Node eight = make_node(ops::kWeightOnlyMatMul, 4, 1, attrs(8, 0, k));
  const Tensor z8 = zero_points8(n);
  EXPECT_TRUE(ops::evaluate_on_host(eight, {a, q8->packed, q8->scales, z8}).ok());
  auto z8u = z8.retyped(DataType::kUInt8).value();
  auto z8r = z8.reshaped({n, 1}).value();
  EXPECT_FALSE(ops::evaluate_on_host(eight, {a, q8->packed, q8->scales, z8u}).ok());
  EXPECT_FALSE(ops::evaluate_on_host(eight, {a, q8->packed, q8->scales, z8r}).ok());
  // A weight that is not finite cannot be quantized.
  std::vector<float> inf = random_floats(k * n, 3);
  inf[5] = INFINITY;
  auto bad_w = ops::quantize_weight(make_tensor(DataType::kFloat32, {k, n}, inf), false, 0, {8, 0, k, n}, "Winf");
  ASSERT_FALSE(bad_w.ok());
  EXPECT_NE(bad_w.status().message().find("Winf"), std::string::npos);
}

// float8 is its own format (the 'float8' attribute with 8 bits): codes of the other kind, zero
// points, or the attribute with 4 bits or another value are refused, never read as the wrong codes.
TEST(WeightQuant, Fp8FormatIsExplicitAndChecked) {
  const int64_t k = 64, n = 8;
  const Tensor w = make_tensor(DataType::kFloat32, {k, n}, random_floats(k * n, 1));
  const Tensor a = make_tensor(DataType::kFloat32, {1, k}, random_floats(k, 2));
  auto f8 = ops::quantize_weight(w, false, 0, {8, 0, k, n, true}, "W");
  auto i8 = ops::quantize_weight(w, false, 0, {8, 0, k, n}, "W");
  ASSERT_TRUE(f8.ok() && i8.ok());
  EXPECT_EQ(f8->packed.dtype(), DataType::kUInt8);
  auto node = [&](int64_t bits, int64_t float8, int inputs) {
    return make_node(ops::kWeightOnlyMatMul, inputs, 1,
                     {{"bits", ir::Attribute::make_int(bits)},
                      {"group", ir::Attribute::make_int(bits == 4 ? 32 : 0)},
                      {"K", ir::Attribute::make_int(k)},
                      {"N", ir::Attribute::make_int(n)},
                      {"float8", ir::Attribute::make_int(float8)}});
  };
  EXPECT_TRUE(ops::evaluate_on_host(node(8, 1, 3), {a, f8->packed, f8->scales}).ok());
  EXPECT_FALSE(ops::evaluate_on_host(node(8, 1, 3), {a, i8->packed, i8->scales}).ok());  // int8 codes
  EXPECT_FALSE(ops::evaluate_on_host(node(8, 0, 3), {a, f8->packed, f8->scales}).ok());  // fp8 codes as int8
  EXPECT_FALSE(ops::evaluate_on_host(node(8, 1, 4), {a, f8->packed, f8->scales, zero_points8(n)}).ok());
  for (auto [bits, float8] : {std::pair<int64_t, int64_t>{4, 1}, {8, 2}}) {
    auto r = ops::read_weight_quant_format(node(bits, float8, 3));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("'float8'"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace streamrt
