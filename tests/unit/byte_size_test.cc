// Budget values (src/core/byte_size.cc): every accepted form, every rejection (with the value
// quoted in the message), resolve_budget's clamping and exact percent rounding, format_bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/byte_size.h"

namespace streamrt {
namespace {

using Kind = BudgetSpec::Kind;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kGiB = uint64_t{1} << 30;

uint64_t bytes_ok(std::string_view text) {
  auto r = parse_budget(text);
  EXPECT_TRUE(r.ok()) << std::string(text) << ": " << r.status().to_string();
  if (!r.ok()) return 0;
  EXPECT_EQ(r->kind, Kind::kBytes) << text;
  return r->bytes;
}

double percent_ok(std::string_view text) {
  auto r = parse_budget(text);
  EXPECT_TRUE(r.ok()) << std::string(text) << ": " << r.status().to_string();
  if (!r.ok()) return -1;
  EXPECT_EQ(r->kind, Kind::kPercent) << text;
  return r->percent;
}

// Rejected with kInvalidArgument; the message quotes `shown` (the value, escaped) and contains
// `why`, and always says what was expected.
void rejected(std::string_view text, const std::string& why, std::string shown = "") {
  auto r = parse_budget(text);
  ASSERT_FALSE(r.ok()) << "accepted: " << std::string(text);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = r.status().message();
  if (shown.empty()) shown = std::string(text);
  EXPECT_NE(msg.find("\"" + shown + "\""), std::string::npos) << msg;
  EXPECT_NE(msg.find(why), std::string::npos) << "wanted '" << why << "' in: " << msg;
  EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
}

TEST(ByteSizeParse, EmptyIsUnsetNotAnError) {
  auto r = parse_budget("");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Kind::kUnset);
  EXPECT_EQ(parse_budget(std::string_view()).value().kind, Kind::kUnset);
}

TEST(ByteSizeParse, PlainBytes) {
  EXPECT_EQ(bytes_ok("8589934592"), 8 * kGiB);
  EXPECT_EQ(bytes_ok("0"), 0u);
  EXPECT_EQ(bytes_ok("1"), 1u);
  EXPECT_EQ(bytes_ok("007"), 7u);
  EXPECT_EQ(bytes_ok("18446744073709551615"), kMax);
  EXPECT_EQ(bytes_ok("000000000000000000000018446744073709551615"), kMax);
}

TEST(ByteSizeParse, BinaryUnits) {
  EXPECT_EQ(bytes_ok("100B"), 100u);
  EXPECT_EQ(bytes_ok("0B"), 0u);
  EXPECT_EQ(bytes_ok("64KiB"), 64u * 1024);
  EXPECT_EQ(bytes_ok("512MiB"), 512u * 1024 * 1024);
  EXPECT_EQ(bytes_ok("8GiB"), 8 * kGiB);
  EXPECT_EQ(bytes_ok("0GiB"), 0u);
  EXPECT_EQ(bytes_ok("1TiB"), kGiB * 1024);
  EXPECT_EQ(bytes_ok("1PiB"), kGiB * 1024 * 1024);
  EXPECT_EQ(bytes_ok("15EiB"), uint64_t{15} << 60);
  EXPECT_EQ(bytes_ok("17179869183GiB"), (uint64_t{17179869183}) << 30);  // 16 EiB - 1 GiB
}

TEST(ByteSizeParse, Overflow) {
  rejected("18446744073709551616", "larger than the largest budget");
  rejected("99999999999999999999999", "larger than the largest budget");
  rejected("16EiB", "larger than the largest budget");
  rejected("17179869184GiB", "larger than the largest budget");  // exactly 16 EiB
  rejected("18446744073709551615KiB", "larger than the largest budget");
  EXPECT_EQ(bytes_ok("18446744073709551615B"), kMax);
  EXPECT_EQ(bytes_ok("15EiB"), uint64_t{15} << 60);
}

TEST(ByteSizeParse, Percent) {
  EXPECT_EQ(percent_ok("50%"), 50.0);
  EXPECT_EQ(percent_ok("0%"), 0.0);
  EXPECT_EQ(percent_ok("100%"), 100.0);
  EXPECT_EQ(percent_ok("100.0%"), 100.0);
  EXPECT_EQ(percent_ok("100.000000000000000%"), 100.0);
  EXPECT_EQ(percent_ok("12.5%"), 12.5);
  EXPECT_EQ(percent_ok("33.3%"), 33.3);  // the nearest double, as strtod would give
  EXPECT_EQ(percent_ok("0.000000001%"), 1e-9);
  EXPECT_EQ(percent_ok("99.999999999%"), 99.999999999);
  EXPECT_EQ(percent_ok("0050%"), 50.0);
  EXPECT_EQ(percent_ok("0.5000000000000%"), 0.5);
}

TEST(ByteSizeParse, PercentRejections) {
  rejected("100.01%", "at most 100");
  rejected("100.000000001%", "at most 100");
  rejected("101%", "at most 100");
  rejected("1000000000000000000000000%", "at most 100");
  rejected("12.0000000001%", "at most 9 significant decimal places");
  rejected("%", "missing number before \"%\"");
  rejected(".5%", "missing digits before '.'");
  rejected("5.%", "missing digits after '.'");
  rejected("50%%", "unexpected \"%%\"");
  rejected("%50", "not a number");
  rejected("50%GiB", "unexpected");
  rejected("1.2.3%", "unexpected");
  rejected("-5%", "a sign is not allowed");
}

TEST(ByteSizeParse, Auto) {
  auto r = parse_budget("auto");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Kind::kAuto);
  rejected("AUTO", "write auto in lowercase");
  rejected("Auto", "write auto in lowercase");
  rejected("auto ", "whitespace");
  rejected("autox", "not a number");
  rejected("auto%", "not a number");
  rejected("8auto", "unexpected \"auto\"");
}

TEST(ByteSizeParse, Signs) {
  rejected("+5", "a sign is not allowed");
  rejected("-5", "a sign is not allowed");
  rejected("-0", "a sign is not allowed");
  rejected("+8GiB", "a sign is not allowed");
  rejected("5-", "unexpected \"-\"");
}

TEST(ByteSizeParse, Whitespace) {
  rejected(" 8GiB", "whitespace is not allowed (at offset 0)");
  rejected("8GiB ", "whitespace is not allowed (at offset 4)");
  rejected("8 GiB", "whitespace is not allowed (at offset 1)");
  rejected("8\tGiB", "whitespace", "8\\x09GiB");
  rejected("8GiB\n", "whitespace", "8GiB\\x0a");
  rejected("50 %", "whitespace");
  rejected(" ", "whitespace");
}

TEST(ByteSizeParse, UnitsAndDecimalUnits) {
  rejected("GiB", "missing number before \"GiB\"");
  rejected("B", "missing number before \"B\"");
  rejected("GB", "missing number before \"GB\"");
  rejected("8GB", "decimal unit \"GB\" is not accepted (use binary units: GiB = 2^30 bytes)");
  rejected("8MB", "MiB = 2^20");
  rejected("8KB", "KiB = 2^10");
  rejected("8kB", "KiB = 2^10");
  rejected("8TB", "TiB = 2^40");
  rejected("8G", "GiB = 2^30");
  rejected("8k", "KiB = 2^10");
  rejected("8EB", "EiB = 2^60");
  rejected("8gib", "units are case-sensitive: write GiB");
  rejected("8GIB", "units are case-sensitive: write GiB");
  rejected("8Gib", "units are case-sensitive: write GiB");
  rejected("8b", "units are case-sensitive: write B");
  rejected("8GiBs", "unexpected \"GiBs\"");
  rejected("8Gi", "unexpected \"Gi\"");
  rejected("8GiBGiB", "unexpected");
  rejected("1.5GiB", "a byte count must be a whole number");
  rejected("1.5", "a byte count must be a whole number");
  rejected("1.", "missing digits after '.'");
  rejected("1e9", "unexpected \"e9\"");
  rejected("0x10", "unexpected \"x10\"");
  rejected("1_000", "unexpected");
  rejected("1,000", "unexpected");
}

TEST(ByteSizeParse, Garbage) {
  rejected("abc", "not a number");
  rejected("x8GiB", "not a number");
  rejected("\"8\"", "not a number", "\\\"8\\\"");
  rejected("inf", "not a number");
  rejected("nan%", "not a number");
}

TEST(ByteSizeParse, NulAndControlBytes) {
  using namespace std::string_view_literals;
  rejected("8\0GiB"sv, "unexpected byte 0x00 at offset 1", "8\\x00GiB");
  rejected("8GiB\0"sv, "unexpected byte 0x00 at offset 4", "8GiB\\x00");
  rejected("\0"sv, "unexpected byte 0x00 at offset 0", "\\x00");
  rejected("auto\0"sv, "unexpected byte 0x00", "auto\\x00");
  rejected("50%\x7f"sv, "unexpected byte 0x7f", "50%\\x7f");
  rejected("8\xc2\xa0GiB"sv, "unexpected byte 0xc2", "8\\xc2\\xa0GiB");  // NBSP
}

TEST(ByteSizeParse, LongValueIsShortenedInTheMessage) {
  const std::string text = std::string(200, '9');
  auto r = parse_budget(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"" + std::string(64, '9') + "...\""), std::string::npos);
  EXPECT_LT(r.status().message().size(), 400u);
}

TEST(ByteSizeResolve, BytesClampedToStreamable) {
  BudgetSpec s{Kind::kBytes, 100, 0};
  EXPECT_EQ(resolve_budget(s, 1000, 7), 100u);
  EXPECT_EQ(resolve_budget(s, 100, 7), 100u);
  EXPECT_EQ(resolve_budget(s, 99, 7), 99u);
  EXPECT_EQ(resolve_budget(s, 0, 7), 0u);
  s.bytes = kMax;
  EXPECT_EQ(resolve_budget(s, kMax, 0), kMax);
  EXPECT_EQ(resolve_budget(s, 12345, 0), 12345u);
  s.bytes = 0;
  EXPECT_EQ(resolve_budget(s, 12345, 999), 0u);  // 0 streams everything
}

TEST(ByteSizeResolve, PercentIsExactFloor) {
  auto pct = [](std::string_view text, uint64_t size) {
    return resolve_budget(parse_budget(text).value(), size, 77);
  };
  EXPECT_EQ(pct("50%", 1000), 500u);
  EXPECT_EQ(pct("50%", 1001), 500u);  // floor
  EXPECT_EQ(pct("33.3%", 1000), 333u);  // not 332: the decimal, not the double below it
  EXPECT_EQ(pct("33.3%", 10000), 3330u);
  EXPECT_EQ(pct("12.5%", 8), 1u);
  EXPECT_EQ(pct("12.5%", 7), 0u);
  EXPECT_EQ(pct("0.1%", 1000), 1u);
  EXPECT_EQ(pct("0.7%", 1000), 7u);
  EXPECT_EQ(pct("0%", kMax), 0u);
  EXPECT_EQ(pct("100%", kMax), kMax);
  EXPECT_EQ(pct("100.0%", 12345), 12345u);
  EXPECT_EQ(pct("99.999999999%", 1000), 999u);
  EXPECT_EQ(pct("50%", kMax), kMax / 2);  // no overflow in size * p
  EXPECT_EQ(pct("1%", kMax), kMax / 100);
  EXPECT_EQ(pct("99%", kMax), static_cast<uint64_t>(
                                  (static_cast<unsigned __int128>(kMax) * 99) / 100));
  EXPECT_EQ(pct("0.000000001%", uint64_t{100000000000}), 1u);
  EXPECT_EQ(pct("0.000000001%", uint64_t{99999999999}), 0u);
  EXPECT_EQ(pct("50%", 0), 0u);
  EXPECT_EQ(pct("100%", 0), 0u);
  // Every integer percentage on a size where p% is never a whole number of bytes.
  for (uint64_t p = 0; p <= 100; ++p) {
    const uint64_t size = 123456789;
    EXPECT_EQ(pct(std::to_string(p) + "%", size), size * p / 100) << p;
  }
}

TEST(ByteSizeResolve, HandBuiltPercentOutOfRangeIsClamped) {
  EXPECT_EQ(resolve_budget({Kind::kPercent, 0, -5.0}, 1000, 1), 0u);
  EXPECT_EQ(resolve_budget({Kind::kPercent, 0, 150.0}, 1000, 1), 1000u);
  EXPECT_EQ(resolve_budget({Kind::kPercent, 0, std::nan("")}, 1000, 1), 0u);
  EXPECT_EQ(resolve_budget({Kind::kPercent, 0, INFINITY}, 1000, 1), 1000u);
}

TEST(ByteSizeResolve, AutoAndUnsetUseAutomaticClamped) {
  for (Kind k : {Kind::kAuto, Kind::kUnset}) {
    BudgetSpec s{k, 5, 50};  // bytes / percent ignored
    EXPECT_EQ(resolve_budget(s, 1000, 300), 300u);
    EXPECT_EQ(resolve_budget(s, 1000, 5000), 1000u);
    EXPECT_EQ(resolve_budget(s, 0, 5000), 0u);
    EXPECT_EQ(resolve_budget(s, kMax, kMax), kMax);
    EXPECT_EQ(resolve_budget(s, 1000, 0), 0u);
  }
}

TEST(ByteSizeFormat, Bytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(123), "123 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(3 * 1024 * 1024 / 2), "1.50 MiB");
  EXPECT_EQ(format_bytes(8 * kGiB), "8 GiB");
  EXPECT_EQ(format_bytes(8 * kGiB + 1), "8.00 GiB");
  EXPECT_EQ(format_bytes(1025), "1.00 KiB");
  EXPECT_EQ(format_bytes(1024 * 1024 - 1), "1.00 MiB");  // not "1024.00 KiB"
  EXPECT_EQ(format_bytes(1024 * 1023 + 1024 * 99 / 100), "1023.99 KiB");
  EXPECT_EQ(format_bytes(uint64_t{1} << 60), "1 EiB");
  EXPECT_EQ(format_bytes(kMax), "16.00 EiB");
  EXPECT_EQ(format_bytes(uint64_t{15} << 60), "15 EiB");
}

TEST(ByteSizeFormat, Budget) {
  EXPECT_EQ(format_budget(parse_budget("").value()), "unset");
  EXPECT_EQ(format_budget(parse_budget("auto").value()), "auto");
  EXPECT_EQ(format_budget(parse_budget("8GiB").value()), "8 GiB");
  EXPECT_EQ(format_budget(parse_budget("12.5%").value()), "12.5%");
  EXPECT_EQ(format_budget(parse_budget("100%").value()), "100%");
  EXPECT_EQ(format_budget(parse_budget("0.000000001%").value()), "0.000000001%");
}

}  // namespace
}  // namespace streamrt
