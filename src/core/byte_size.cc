// Budget values: parse_budget, resolve_budget, format_bytes (see byte_size.h for the grammar
// and the choices behind it).
#include "core/byte_size.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace streamrt {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
// Percentages are exact in units of 1e-9 %: 100 % = 1e11 units.
constexpr int kPercentDecimals = 9;
constexpr uint64_t kPercentScale = 1'000'000'000;
constexpr uint64_t kHundredPercent = 100 * kPercentScale;

struct Unit {
  std::string_view name;
  int shift;  // the unit is 2^shift bytes
};
constexpr Unit kUnits[] = {{"B", 0},   {"KiB", 10}, {"MiB", 20}, {"GiB", 30},
                           {"TiB", 40}, {"PiB", 50}, {"EiB", 60}};
// Decimal / SI-looking spellings that are refused, and the binary unit they probably meant
// (compared case-insensitively, so "gb", "Gb", "GB" and "g" all land here).
struct DecimalUnit {
  std::string_view name;
  std::string_view binary;
};
constexpr DecimalUnit kDecimalUnits[] = {
    {"KB", "KiB"}, {"MB", "MiB"}, {"GB", "GiB"}, {"TB", "TiB"}, {"PB", "PiB"}, {"EB", "EiB"},
    {"K", "KiB"},  {"M", "MiB"},  {"G", "GiB"},  {"T", "TiB"},  {"P", "PiB"},  {"E", "EiB"}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
char upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (upper(a[i]) != upper(b[i])) return false;
  return true;
}

// The value as it can be shown in a message: quoted, with quotes, backslashes, control and
// non-ASCII bytes escaped (a NUL inside must not cut the message), long values shortened.
std::string quote(std::string_view text) {
  constexpr size_t kMaxShown = 64;
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

Status bad(std::string_view text, const std::string& why) {
  return invalid_argument("invalid weight-streaming budget " + quote(text) + ": " + why +
                          "; expected a byte count (8589934592), a binary size (512MiB, 8GiB), "
                          "a percentage of the streamable size 0..100 (50%, 12.5%) or auto");
}

// The first byte that no budget may contain, with the reason; npos when there is none.
size_t find_forbidden(std::string_view text, std::string* why) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == ' ' || (c >= '\t' && c <= '\r')) {
      *why = "whitespace is not allowed (at offset " + std::to_string(i) + ")";
      return i;
    }
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "0x%02x", c);
      *why = std::string("unexpected byte ") + buf + " at offset " + std::to_string(i);
      return i;
    }
  }
  return std::string_view::npos;
}

Result<BudgetSpec> parse_percent(std::string_view text, std::string_view int_digits,
                                 std::string_view frac_digits) {
  uint64_t whole = 0;  // saturates just above 100: anything larger is rejected the same way
  for (char c : int_digits) {
    whole = whole * 10 + static_cast<uint64_t>(c - '0');
    if (whole > 100) return bad(text, "a percentage must be at most 100");
  }
  uint64_t frac = 0;
  for (size_t i = 0; i < frac_digits.size(); ++i) {
    if (i < kPercentDecimals) {
      frac = frac * 10 + static_cast<uint64_t>(frac_digits[i] - '0');
    } else if (frac_digits[i] != '0') {
      return bad(text, "a percentage may have at most " + std::to_string(kPercentDecimals) +
                           " significant decimal places");
    }
  }
  for (size_t i = frac_digits.size(); i < kPercentDecimals; ++i) frac *= 10;
  const uint64_t units = whole * kPercentScale + frac;
  if (units > kHundredPercent) return bad(text, "a percentage must be at most 100");
  BudgetSpec spec;
  spec.kind = BudgetSpec::Kind::kPercent;
  // units < 2^53 and the division is correctly rounded: the nearest double to the decimal.
  spec.percent = static_cast<double>(units) / static_cast<double>(kPercentScale);
  return spec;
}

// Why a suffix that is not one of kUnits was refused.
std::string unit_error(std::string_view suffix) {
  for (const auto& u : kUnits)
    if (iequals(suffix, u.name))
      return "unknown unit " + quote(suffix) + " (units are case-sensitive: write " +
             std::string(u.name) + ")";
  for (const auto& d : kDecimalUnits) {
    if (!iequals(suffix, d.name)) continue;
    int shift = 0;
    for (const auto& u : kUnits)
      if (u.name == d.binary) shift = u.shift;
    return "decimal unit " + quote(suffix) + " is not accepted (use binary units: " +
           std::string(d.binary) + " = 2^" + std::to_string(shift) + " bytes)";
  }
  return "unexpected " + quote(suffix) +
         " after the number (units: B, KiB, MiB, GiB, TiB, PiB, EiB, or %)";
}

Result<BudgetSpec> parse_bytes(std::string_view text, std::string_view digits,
                               std::string_view suffix) {
  int shift = -1;
  if (suffix.empty()) shift = 0;
  for (const auto& u : kUnits)
    if (suffix == u.name) shift = u.shift;
  if (shift < 0) return bad(text, unit_error(suffix));
  const std::string too_large =
      "the value is larger than the largest budget, 18446744073709551615 bytes (16 EiB - 1)";
  uint64_t value = 0;
  for (char c : digits) {
    const auto d = static_cast<uint64_t>(c - '0');
    if (value > (kMax - d) / 10) return bad(text, too_large);
    value = value * 10 + d;
  }
  if (value > (kMax >> shift)) return bad(text, too_large);
  BudgetSpec spec;
  spec.kind = BudgetSpec::Kind::kBytes;
  spec.bytes = value << shift;
  return spec;
}

// A binary or decimal unit in any case: "GiB", "gib", "GB", "g".
bool is_unit_like(std::string_view s) {
  for (const auto& u : kUnits)
    if (iequals(s, u.name)) return true;
  for (const auto& d : kDecimalUnits)
    if (iequals(s, d.name)) return true;
  return false;
}

size_t count_digits(std::string_view s, size_t from) {
  size_t n = 0;
  while (from + n < s.size() && is_digit(s[from + n])) ++n;
  return n;
}

}  // namespace

Result<BudgetSpec> parse_budget(std::string_view text) {
  if (text.empty()) return BudgetSpec{};  // kUnset: the caller warns and ignores it
  std::string why;
  if (find_forbidden(text, &why) != std::string_view::npos) return bad(text, why);
  if (text == "auto") {
    BudgetSpec spec;
    spec.kind = BudgetSpec::Kind::kAuto;
    return spec;
  }
  if (iequals(text, "auto")) return bad(text, "write auto in lowercase");
  if (text[0] == '+' || text[0] == '-') return bad(text, "a sign is not allowed");

  const size_t n_int = count_digits(text, 0);
  size_t pos = n_int;
  size_t n_frac = 0;
  const bool has_point = pos < text.size() && text[pos] == '.';
  if (has_point) {
    n_frac = count_digits(text, pos + 1);
    pos += 1 + n_frac;
  }
  const std::string_view suffix = text.substr(pos);
  if (n_int == 0) {
    if (has_point) return bad(text, "missing digits before '.'");
    return bad(text, suffix == "%" || is_unit_like(suffix) ? "missing number before " + quote(suffix)
                                                           : std::string("not a number"));
  }
  if (has_point && n_frac == 0) return bad(text, "missing digits after '.'");

  const std::string_view int_digits = text.substr(0, n_int);
  if (suffix == "%")
    return parse_percent(text, int_digits, has_point ? text.substr(n_int + 1, n_frac) : "");
  if (has_point && !(suffix.empty() || is_unit_like(suffix)))
    return bad(text, unit_error(suffix));
  if (has_point)
    return bad(text, "a byte count must be a whole number (write 1536MiB, not 1.5GiB)");
  return parse_bytes(text, int_digits, suffix);
}

uint64_t resolve_budget(const BudgetSpec& spec, uint64_t streamable_size, uint64_t automatic) {
  switch (spec.kind) {
    case BudgetSpec::Kind::kBytes:
      return spec.bytes < streamable_size ? spec.bytes : streamable_size;
    case BudgetSpec::Kind::kPercent: {
      const double p = spec.percent;
      if (!(p > 0)) return 0;  // also NaN
      if (p >= 100) return streamable_size;
      // p * 1e9 <= 1e11 < 2^53, so the rounding recovers the parsed decimal exactly.
      const auto units = static_cast<uint64_t>(std::llround(p * static_cast<double>(kPercentScale)));
      const unsigned __int128 product = static_cast<unsigned __int128>(streamable_size) * units;
      const auto r = static_cast<uint64_t>(product / kHundredPercent);  // floor; <= size
      return r < streamable_size ? r : streamable_size;
    }
    case BudgetSpec::Kind::kAuto:
    case BudgetSpec::Kind::kUnset:
      break;
  }
  return automatic < streamable_size ? automatic : streamable_size;
}

std::string format_bytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  size_t u = 1;
  while (u + 1 < std::size(kUnits) && (bytes >> kUnits[u + 1].shift) != 0) ++u;
  const uint64_t unit = uint64_t{1} << kUnits[u].shift;
  if (bytes % unit == 0) return std::to_string(bytes / unit) + " " + std::string(kUnits[u].name);
  auto hundredths = [&](size_t k) {
    const uint64_t div = uint64_t{1} << kUnits[k].shift;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(bytes) * 100 + div / 2) / div);
  };
  uint64_t h = hundredths(u);
  if (h >= 1024 * 100 && u + 1 < std::size(kUnits)) h = hundredths(++u);  // 1023.999 KiB
  char frac[4];
  std::snprintf(frac, sizeof(frac), "%02u", static_cast<unsigned>(h % 100));
  return std::to_string(h / 100) + "." + frac + " " + std::string(kUnits[u].name);
}

std::string format_budget(const BudgetSpec& spec) {
  switch (spec.kind) {
    case BudgetSpec::Kind::kUnset:
      return "unset";
    case BudgetSpec::Kind::kAuto:
      return "auto";
    case BudgetSpec::Kind::kBytes:
      return format_bytes(spec.bytes);
    case BudgetSpec::Kind::kPercent: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.9f", spec.percent);
      std::string s = buf;
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
      return s + "%";
    }
  }
  return "unset";
}

}  // namespace streamrt
