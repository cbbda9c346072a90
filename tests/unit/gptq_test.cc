// GPTQ (builder/gptq.h): on correlated inputs its codes give products closer to the float ones than
// rounding does; with statistics that correlate nothing it is rounding, code for code (so its
// format is the one the kernels read); bad statistics and weights are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "builder/gptq.h"
#include "quant_test_util.h"
#include "tactics_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

// Rows of inputs mixed across channels, a few channels much larger than the rest (as activations
// feeding transformer projections are): [rows, k].
std::vector<float> correlated_inputs(int64_t rows, int64_t k, uint32_t draws) {
  std::mt19937 mix_rng(1), rng(draws);  // one mix; `draws` picks the rows
  std::normal_distribution<float> nd(0.f, 1.f);
  const int64_t r = k / 4;  // a low-rank mix plus noise
  std::vector<float> mix(static_cast<size_t>(r * k)), x(static_cast<size_t>(rows * k));
  for (float& v : mix) v = nd(mix_rng);
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<float> z(static_cast<size_t>(r));
    for (float& v : z) v = nd(rng);
    for (int64_t j = 0; j < k; ++j) {
      float s = 0.1f * nd(rng);
      for (int64_t t = 0; t < r; ++t) s += z[t] * mix[t * k + j];
      x[i * k + j] = s * (j % 16 == 3 ? 8.f : 1.f);
    }
  }
  return x;
}

builder::InputStatistics statistics(const std::vector<float>& x, int64_t rows, int64_t k) {
  builder::InputStatistics s;
  s.k = k;
  s.xtx.assign(static_cast<size_t>(k * k), 0.f);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      double acc = 0;
      for (int64_t r = 0; r < rows; ++r) acc += double{x[r * k + i]} * x[r * k + j];
      s.xtx[i * k + j] = static_cast<float>(acc);
    }
  return s;
}

// ||X (W - Wq)||^2 over the rows of x, W [K, N] (not transposed), deq [N][K].
double output_error(const std::vector<float>& x, int64_t rows, const std::vector<float>& w,
                    const std::vector<double>& deq, int64_t k, int64_t n) {
  double err = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double d = 0;
      for (int64_t i = 0; i < k; ++i) d += x[r * k + i] * (w[i * n + c] - deq[c * k + i]);
      err += d * d;
    }
  return err;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  return std::vector<uint8_t>(p, p + t.nbytes());
}

struct Scheme {
  int bits, group;
  bool fp8 = false;
};

TEST(Gptq, ProductsOnCorrelatedInputsAreCloserThanRounding) {
  constexpr int64_t kK = 256, kN = 48, kRows = 768;
  const std::vector<float> x = correlated_inputs(kRows, kK, 5);
  const builder::InputStatistics s = statistics(x, kRows, kK);
  auto u = builder::gptq_inverse_factor(s);
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  const std::vector<float> wv = random_floats(static_cast<size_t>(kK * kN), 6);
  const Tensor w = Tensor::from_vector<float>(DataType::kFloat32, {kK, kN}, wv);
  const std::vector<float> held_out = correlated_inputs(kRows, kK, 6);  // rows the statistics never saw
  for (Scheme sc : {Scheme{8, 0}, Scheme{8, 0, true}, Scheme{4, 32}, Scheme{4, 128}}) {
    SCOPED_TRACE("bits " + std::to_string(sc.bits) + " group " + std::to_string(sc.group) + (sc.fp8 ? " float8" : ""));
    ops::WeightQuantFormat f{sc.bits, sc.group, kK, kN, sc.fp8};
    auto rtn = ops::quantize_weight(w, false, 0, f, "W");
    auto gptq = builder::quantize_weight_gptq(w, false, f, *u, "W");
    ASSERT_TRUE(rtn.ok() && gptq.ok()) << gptq.status().to_string();
    EXPECT_EQ(gptq->packed.dims(), rtn->packed.dims());
    EXPECT_EQ(gptq->scales.dims(), rtn->scales.dims());
    const auto d_rtn = dequantize_ref(*rtn, sc.bits, sc.group, kK, kN, sc.fp8);
    const auto d_gptq = dequantize_ref(*gptq, sc.bits, sc.group, kK, kN, sc.fp8);
    // GPTQ minimizes this error on the calibration rows; on inputs this correlated it is several
    // times smaller than rounding's (float8's uneven grid: smaller), on rows drawn alike but never
    // seen as well.
    for (const auto* rows : {&x, &held_out}) {
      const double e_rtn = output_error(*rows, kRows, wv, d_rtn, kK, kN);
      const double e_gptq = output_error(*rows, kRows, wv, d_gptq, kK, kN);
      EXPECT_LT(e_gptq, (sc.fp8 ? 0.9 : 0.5) * e_rtn) << (rows == &x ? "calibration" : "held-out") << " rows: GPTQ " << e_gptq
                                     << " vs rounding " << e_rtn;
    }
  }
}

TEST(Gptq, UncorrelatedStatisticsGiveTheCodesOfRounding) {
  constexpr int64_t kK = 200, kN = 40;  // K no multiple of the group: a padded last group
  builder::InputStatistics s;
  s.k = kK;
  s.xtx.assign(static_cast<size_t>(kK * kK), 0.f);
  for (int64_t i = 0; i < kK; ++i) s.xtx[i * kK + i] = static_cast<float>(1 + i % 7);
  auto u = builder::gptq_inverse_factor(s);
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  for (bool trans : {false, true}) {
    const Dims wd = trans ? Dims{kN, kK} : Dims{kK, kN};
    const Tensor w = Tensor::from_vector<float>(DataType::kFloat32, wd, random_floats(static_cast<size_t>(kK * kN), 9));
    for (Scheme sc : {Scheme{8, 0}, Scheme{8, 0, true}, Scheme{4, 32}, Scheme{4, 64}}) {
      SCOPED_TRACE("trans " + std::to_string(trans) + " bits " + std::to_string(sc.bits) + (sc.fp8 ? " float8" : ""));
      ops::WeightQuantFormat f{sc.bits, sc.group, kK, kN, sc.fp8};
      auto rtn = ops::quantize_weight(w, trans, 0, f, "W");
      auto gptq = builder::quantize_weight_gptq(w, trans, f, *u, "W");
      ASSERT_TRUE(rtn.ok() && gptq.ok()) << gptq.status().to_string();
      EXPECT_EQ(bytes_of(gptq->packed), bytes_of(rtn->packed));
      EXPECT_EQ(values<float>(gptq->scales), values<float>(rtn->scales));
      if (sc.bits == 4) {
        EXPECT_EQ(values<uint8_t>(gptq->zeros), values<uint8_t>(rtn->zeros));
      }
    }
  }
}

TEST(Gptq, RefusesStatisticsAndWeightsThatDoNotFit) {
  builder::InputStatistics bad;
  bad.k = 4;
  bad.xtx.assign(15, 1.f);
  EXPECT_EQ(builder::gptq_inverse_factor(bad).status().code(), StatusCode::kInvalidArgument);
  builder::InputStatistics s;
  s.k = 4;
  s.xtx.assign(16, 0.f);
  for (int i = 0; i < 4; ++i) s.xtx[i * 5] = 1.f;
  auto u = builder::gptq_inverse_factor(s);
  ASSERT_TRUE(u.ok());
  std::vector<float> wv(4 * 3, 0.5f);
  wv[7] = NAN;
  const Tensor w = Tensor::from_vector<float>(DataType::kFloat32, {4, 3}, wv);
  auto q = builder::quantize_weight_gptq(w, false, ops::WeightQuantFormat{8, 0, 4, 3}, *u, "W");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("element (2, 1) is not finite"), std::string::npos) << q.status().to_string();
  auto other_k = builder::quantize_weight_gptq(w, false, ops::WeightQuantFormat{8, 0, 3, 4}, *u, "W");
  EXPECT_EQ(other_k.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace streamrt
