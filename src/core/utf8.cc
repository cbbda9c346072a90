#include "core/utf8.h"

#include <cstdint>

namespace streamrt {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the byte there starts none.
size_t sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return i + k < s.size() ? static_cast<uint8_t>(s[i + k]) : uint8_t{0}; };
  const auto cont = [](uint8_t b, uint8_t lo = 0x80, uint8_t hi = 0xBF) { return b >= lo && b <= hi; };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(byte(1)) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    // E0: no overlong forms; ED: no UTF-16 surrogates.
    const uint8_t lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    return cont(byte(1), lo, hi) && cont(byte(2)) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    // F0: no overlong forms; F4: nothing above U+10FFFF.
    const uint8_t lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return cont(byte(1), lo, hi) && cont(byte(2)) && cont(byte(3)) ? 4 : 0;
  }
  return 0;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string printable_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = sequence_length(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    const auto b = static_cast<uint8_t>(s[i++]);
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace streamrt
