// Small helpers of the quantization tests (ops_quantize_test.cc, ops_quantized_gemm_test.cc, the
// weight-only quantization tests weight_quant_test.cc and gptq_test.cc).
#pragma once

#include <vector>

#include "core/tensor.h"
#include "ops/op.h"
#include "core/float8.h"
#include "ops/weight_quant.h"

namespace streamrt::testing {

template <typename T>
Tensor tensor(DataType t, const Dims& d, const std::vector<T>& v) {
  return Tensor::from_vector(t, d, v);
}
template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data_as<T>(), t.data_as<T>() + t.numel());
}

inline std::vector<double> as_doubles(const Tensor& t) {
  std::vector<float> f = t.to_float_vector().value();
  return std::vector<double>(f.begin(), f.end());
}


// The stored weights unpacked here, independently of the kernel: w[n][k] in double (float8 codes
// through core/float8.h's table).
inline std::vector<double> dequantize_ref(const ops::QuantizedWeight& q, int bits, int64_t group, int64_t k, int64_t n,
                                          bool fp8 = false) {
  std::vector<double> w(static_cast<size_t>(n * k));
  const std::vector<double> s = as_doubles(q.scales);
  if (fp8) {
    const auto* c = q.packed.data_as<uint8_t>();
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < k; ++i) w[j * k + i] = static_cast<double>(e4m3_to_float(c[j * k + i])) * s[j];
    return w;
  }
  if (bits == 8) {  // zero points (int8 [N]) where given
    const auto* c = q.packed.data_as<int8_t>();
    for (int64_t j = 0; j < n; ++j) {
      const double z = q.zeros.empty() ? 0 : q.zeros.data_as<int8_t>()[j];
      for (int64_t i = 0; i < k; ++i) w[j * k + i] = (c[j * k + i] - z) * s[j];
    }
    return w;
  }
  const int64_t groups = (k + group - 1) / group, row = groups * group / 2;
  const auto* p = q.packed.data_as<uint8_t>();
  const auto* z = q.zeros.data_as<uint8_t>();
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < k; ++i) {
      const int code = (p[j * row + i / 2] >> (4 * (i % 2))) & 15;
      const int64_t g = j * groups + i / group;
      w[j * k + i] = (code - static_cast<double>(z[g])) * s[g];
    }
  return w;
}

}  // namespace streamrt::testing
