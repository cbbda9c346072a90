#include "builder/gptq.h"

#include <algorithm>
#include <cmath>

#include "ops/common.h"
#include "ops/gemm_util.h"

// LAPACK (OpenBLAS carries it; Debian ships no lapack.h beside cblas.h): Cholesky factorization
// and the inverse of a triangular matrix, column-major.
extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
void strtri_(const char* uplo, const char* diag, const int* n, float* a, const int* lda, int* info);
}

namespace streamrt::builder {
namespace {

using ops::dispatch;
using ops::kFloats;
using ops::load;
using ops::QuantStep;
using ops::store;

// Columns are compensated within a block one by one and beyond it by one GEMM per block (the
// paper's "lazy batch" updates); a multiple of every group size.
constexpr int64_t kBlock = 128;

// GPTQ wants U upper with U^T U = A^-1 (A = H + λI). With J the order reversal, J A J = L L^T
// (Cholesky, lower) gives A^-1 = (J L^-T J)(J L^-1 J), so U = J L^-1 J: one factorization and one
// triangular inverse (2/3 k^3 flops) instead of factor, invert, factor again. `a` holds J A J
// column-major and returns L^-1; false when A is not positive definite.
bool reversed_inverse_factor(std::vector<float>& a, int64_t k) {
  const int n = static_cast<int>(k);
  int info = 0;
  spotrf_("L", &n, a.data(), &n, &info);
  if (info != 0) return false;
  strtri_("L", "N", &n, a.data(), &n, &info);
  return info == 0;
}

// The [K, N] weight as floats, input-major: row kk holds every output channel's kk-th weight.
template <typename T>
std::vector<float> input_major(const T* p, int64_t k, int64_t n, bool trans) {
  std::vector<float> w(static_cast<size_t>(k * n));
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t c = 0; c < n; ++c) w[kk * n + c] = static_cast<float>(load(trans ? p[c * k + kk] : p[kk * n + c]));
  return w;
}

template <typename T>
class Gptq {
 public:
  Gptq(std::vector<float> w, const ops::WeightQuantFormat& f, const std::vector<float>& u, ops::QuantizedWeight& q)
      : w_(std::move(w)), f_(f), u_(u), q_(q), n_(f.n), k_(f.k), steps_(static_cast<size_t>(f.n)),
        err_(static_cast<size_t>(kBlock * f.n)) {}

  Status run() {
    if (f_.bits == 8) channel_scales();
    for (int64_t b0 = 0; b0 < k_; b0 += kBlock) {
      const int64_t b1 = std::min(k_, b0 + kBlock);
      for (int64_t j = b0; j < b1; ++j) column(j, b0, b1);
      if (b1 < k_)  // W[b1:, :] -= U[b0:b1, b1:]^T E
        SRT_RETURN_IF_ERROR(ops::sgemm(true, false, k_ - b1, n_, b1 - b0, -1.f, u_.data() + b0 * k_ + b1, k_,
                                       err_.data(), n_, 1.f, w_.data() + b1 * n_, n_));
    }
    return ok_status();
  }

 private:
  // Symmetric, from the whole channel before any compensation (int8 and float8 have one scale per
  // channel).
  void channel_scales() {
    for (int64_t c = 0; c < n_; ++c) {
      float amax = 0;
      for (int64_t kk = 0; kk < k_; ++kk) amax = std::max(amax, std::fabs(w_[kk * n_ + c]));
      steps_[c] = f_.fp8 ? ops::fp8_step<T>(amax) : ops::int8_step<T>(amax);
      q_.scales.mutable_data_as<T>()[c] = store<T>(steps_[c].scale);
    }
  }

  // The group's [min, max] widened to hold 0, from the values compensated so far.
  void int4_group(int64_t j) {
    const int64_t g = j / f_.group, j1 = std::min(k_, j + f_.group);
    for (int64_t c = 0; c < n_; ++c) {
      float lo = 0, hi = 0;
      for (int64_t kk = j; kk < j1; ++kk) {
        lo = std::min(lo, w_[kk * n_ + c]);
        hi = std::max(hi, w_[kk * n_ + c]);
      }
      steps_[c] = ops::int4_step<T>(lo, hi);
      q_.scales.mutable_data_as<T>()[c * f_.groups() + g] = store<T>(steps_[c].scale);
      q_.zeros.mutable_data_as<uint8_t>()[c * f_.groups() + g] = static_cast<uint8_t>(steps_[c].zero);
    }
  }

  // Quantizes input j of every channel and spreads each rounding error over inputs j+1 .. b1.
  void column(int64_t j, int64_t b0, int64_t b1) {
    if (f_.bits == 4 && j % f_.group == 0) int4_group(j);
    const float d = u_[j * k_ + j];
    float* row = w_.data() + j * n_;
    float* e = err_.data() + (j - b0) * n_;
    for (int64_t c = 0; c < n_; ++c) {
      const QuantStep& st = steps_[c];
      float deq;
      if (f_.fp8) {
        const uint8_t code = ops::fp8_code(row[c], st);
        q_.packed.mutable_data_as<uint8_t>()[c * k_ + j] = code;
        deq = e4m3_to_float(code) * st.scale;
      } else if (f_.bits == 8) {
        const float code = ops::int8_code(row[c], st);
        q_.packed.mutable_data_as<int8_t>()[c * k_ + j] = static_cast<int8_t>(code);
        deq = code * st.scale;
      } else {
        const float code = ops::int4_code(row[c], st);
        const auto v = static_cast<uint8_t>(code);
        q_.packed.mutable_data_as<uint8_t>()[c * f_.row_bytes() + j / 2] |= static_cast<uint8_t>(j % 2 ? v << 4 : v);
        deq = (code - st.zero) * st.scale;
      }
      e[c] = (row[c] - deq) / d;
    }
    for (int64_t jj = j + 1; jj < b1; ++jj) {
      const float h = u_[j * k_ + jj];
      float* r = w_.data() + jj * n_;
      for (int64_t c = 0; c < n_; ++c) r[c] -= h * e[c];
    }
  }

  std::vector<float> w_;
  const ops::WeightQuantFormat& f_;
  const std::vector<float>& u_;
  ops::QuantizedWeight& q_;
  const int64_t n_, k_;
  std::vector<QuantStep> steps_;
  std::vector<float> err_;  // the block's scaled errors, [kBlock, N]
};

}  // namespace

Result<std::vector<float>> gptq_inverse_factor(const InputStatistics& s) {
  const int64_t k = s.k;
  if (k < 1 || s.xtx.size() != static_cast<size_t>(k * k))
    return invalid_argument("GPTQ: statistics of " + std::to_string(s.xtx.size()) + " values for K " +
                            std::to_string(k));
  if (k > (int64_t{1} << 30) / k) return invalid_argument("GPTQ: K " + std::to_string(k) + " is too large");
  double mean = 0;
  int64_t live = 0;
  for (int64_t i = 0; i < k; ++i)
    if (s.xtx[i * k + i] > 0) {
      mean += s.xtx[i * k + i];
      ++live;
    }
  mean = live > 0 ? mean / static_cast<double>(live) : 1.0;
  for (double damp = 0.01 * mean; damp <= 10.0 * mean; damp *= 10) {
    std::vector<float> a(static_cast<size_t>(k * k));  // J A J, column-major (A is symmetric)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < k; ++i) {
        const int64_t r = k - 1 - i, c = k - 1 - j;
        double v = s.xtx[r * k + c];
        if (r == c) v = (v > 0 ? v : 1.0) + damp;  // inputs never seen count with unit weight
        a[i + j * k] = static_cast<float>(v);
      }
    if (!reversed_inverse_factor(a, k)) continue;
    std::vector<float> u(static_cast<size_t>(k * k), 0.f);
    for (int64_t i = 0; i < k; ++i)  // U[i, j] = L^-1[k-1-i, k-1-j], i <= j
      for (int64_t j = i; j < k; ++j) u[i * k + j] = a[(k - 1 - i) + (k - 1 - j) * k];
    return u;
  }
  return invalid_argument("GPTQ: the calibration statistics (K " + std::to_string(k) +
                          ") are not positive definite even with damping");
}

Result<ops::QuantizedWeight> quantize_weight_gptq(const Tensor& w, bool trans, const ops::WeightQuantFormat& f,
                                                  const std::vector<float>& u, const std::string& name) {
  const Dims& d = w.dims();
  const std::string where = "quantizing weight '" + name + "' " + dims_to_string(d) + " with calibration";
  if (d.size() != 2 || (trans ? d[1] : d[0]) != f.k || (trans ? d[0] : d[1]) != f.n)
    return invalid_argument(where + ": expected [K " + std::to_string(f.k) + ", N " + std::to_string(f.n) + "]");
  if (u.size() != static_cast<size_t>(f.k * f.k))
    return invalid_argument(where + ": the calibration factor does not have K " + std::to_string(f.k));
  ops::QuantizedWeight q;
  SRT_ASSIGN_OR_RETURN(q.packed, Tensor::allocate(f.packed_dtype(), f.packed_dims()));
  SRT_ASSIGN_OR_RETURN(q.scales, Tensor::allocate(w.dtype(), f.scale_dims()));
  std::fill_n(static_cast<uint8_t*>(q.packed.mutable_data()), q.packed.nbytes(), uint8_t{0});
  if (f.bits == 4) {
    SRT_ASSIGN_OR_RETURN(q.zeros, Tensor::allocate(DataType::kUInt8, f.zero_dims()));
  }
  Status st = dispatch<kFloats>(w.dtype(), where, [&]<typename T>() -> Status {
    std::vector<float> wf = input_major(w.data_as<T>(), f.k, f.n, trans);
    for (size_t i = 0; i < wf.size(); ++i)
      if (!std::isfinite(wf[i]))
        return invalid_argument(where + ": element (" + std::to_string(i / f.n) + ", " + std::to_string(i % f.n) +
                                ") is not finite; such a weight cannot be quantized");
    return Gptq<T>(std::move(wf), f, u, q).run();
  });
  if (!st.ok()) return st;
  return q;
}

}  // namespace streamrt::builder
