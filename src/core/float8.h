// float8 e4m3 (the OCP "FN" variant: 4 exponent bits with bias 7, 3 mantissa bits, no infinities,
// 0x7F / 0xFF NaN, largest finite 448, smallest subnormal 2^-9) to and from float. Weight-only
// quantization (--weight-quant fp8) stores its codes this way.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace streamrt {

inline constexpr float kFloat8E4M3Max = 448.f;

// The nearest e4m3 code (ties to even), saturating at +-448 (infinities included); NaN -> 0x7F.
inline uint8_t float_to_e4m3(float f) {
  if (std::isnan(f)) return 0x7F;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  const float a = std::fabs(f);
  if (a >= kFloat8E4M3Max) return sign | 0x7E;
  if (a < 0x1p-6f) return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::nearbyint(a * 0x1p9f)));  // 0..8
  int ex = 0;
  const float fr = std::frexp(a, &ex);  // a = fr * 2^ex, fr in [0.5, 1)
  int e = ex - 1;
  int m = static_cast<int>(std::nearbyint((fr * 2.f - 1.f) * 8.f));
  if (m == 8) m = 0, ++e;
  const int biased = e + 7;
  if (biased > 15 || (biased == 15 && m == 7)) return sign | 0x7E;
  return static_cast<uint8_t>(sign | (biased << 3) | m);
}

// The value of every code.
inline const std::array<float, 256>& e4m3_values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) {
      const int e = (c >> 3) & 15, m = c & 7;
      float v = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.f + m / 8.f, e - 7);
      if (e == 15 && m == 7) v = NAN;
      t[static_cast<size_t>(c)] = c & 0x80 ? -v : v;
    }
    return t;
  }();
  return table;
}
inline float e4m3_to_float(uint8_t c) { return e4m3_values()[c]; }

}  // namespace streamrt
