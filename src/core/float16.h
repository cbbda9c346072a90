// IEEE half and bfloat16 storage types with float conversion (round to nearest even).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace streamrt {

struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0u));
    int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (e <= 0) {
      if (e < -10) return static_cast<uint16_t>(sign);
      man |= 0x800000u;
      int shift = 14 - e;
      uint32_t half_man = man >> shift;
      uint32_t rem = man & ((1u << shift) - 1);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half_man & 1u))) ++half_man;
      return static_cast<uint16_t>(sign | half_man);
    }
    uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into exponent: correct
    return static_cast<uint16_t>(h);
  }

  static float to_float(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
      if (man == 0) {
        x = sign;
      } else {
        int e = -1;
        do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
        x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
      }
    } else if (exp == 31) {
      x = sign | 0x7f800000u | (man << 13);
    } else {
      x = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
  static float to_float(uint16_t b) {
    uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

// Bulk conversions, bit-identical to the per-value ones above (the builder converts whole
// models: F16C instructions where the CPU has them).
void floats_to_half(const float* src, uint16_t* dst, size_t n);
void floats_to_bfloat16(const float* src, uint16_t* dst, size_t n);

}  // namespace streamrt
