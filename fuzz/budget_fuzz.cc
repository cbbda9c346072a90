// libFuzzer target for the weight-streaming budget parser (src/core/byte_size.cc,
// parse_budget). A rejection must be kInvalidArgument and quote the value; an accepted value
// must resolve, for any streamable size, to at most that size, exactly as the rules say.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "core/byte_size.h"

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kSizes[] = {0, 1, 7, 1000, 123456789, (uint64_t{1} << 32) + 7, kMax / 3, kMax};
constexpr uint64_t kAutomatic[] = {0, 500, kMax};

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using streamrt::BudgetSpec;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = streamrt::parse_budget(text);
  if (!r.ok()) {
    check(r.status().code() == streamrt::StatusCode::kInvalidArgument);
    check(r.status().message().find("budget \"") != std::string::npos);
    check(r.status().message().size() < 1024);  // long values are shortened
    return 0;
  }
  const BudgetSpec spec = *r;
  check((spec.kind == BudgetSpec::Kind::kUnset) == text.empty());
  if (spec.kind == BudgetSpec::Kind::kPercent) check(spec.percent >= 0 && spec.percent <= 100);
  if (spec.kind == BudgetSpec::Kind::kBytes) {  // the canonical spelling parses back the same
    auto back = streamrt::parse_budget(std::to_string(spec.bytes));
    check(back.ok() && back->kind == BudgetSpec::Kind::kBytes && back->bytes == spec.bytes);
  }
  check(!streamrt::format_budget(spec).empty());
  for (uint64_t s : kSizes) {
    for (uint64_t a : kAutomatic) {
      const uint64_t b = streamrt::resolve_budget(spec, s, a);
      check(b <= s);
      check(!streamrt::format_bytes(b).empty());
      switch (spec.kind) {
        case BudgetSpec::Kind::kBytes:
          check(b == (spec.bytes < s ? spec.bytes : s));
          break;
        case BudgetSpec::Kind::kPercent:
          if (spec.percent == 0) check(b == 0);
          if (spec.percent == 100) check(b == s);
          // floor(s * p / 100) within the rounding of a double.
          check(static_cast<long double>(b) <=
                static_cast<long double>(s) * spec.percent / 100 * (1 + 1e-12L) + 1);
          break;
        case BudgetSpec::Kind::kAuto:
        case BudgetSpec::Kind::kUnset:
          check(b == (a < s ? a : s));
          break;
      }
    }
  }
  // Monotonic in the streamable size for a fixed spec.
  uint64_t prev = 0;
  for (uint64_t s : kSizes) {
    const uint64_t b = streamrt::resolve_budget(spec, s, 500);
    check(b >= prev || spec.kind == BudgetSpec::Kind::kAuto || spec.kind == BudgetSpec::Kind::kUnset);
    prev = b;
  }
  return 0;
}
