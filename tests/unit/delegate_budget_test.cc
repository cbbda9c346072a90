// Budget resolution and split (src/delegate/budget.h), without engines: precedence of the
// levels alone and combined, the rules for both keys, empty and malformed values, and the exact
// proportional split checked against a naive computation.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "delegate/budget.h"
#include "delegate/streamrt_backend.h"

namespace streamrt::delegate {
namespace {

using Kind = BudgetSpec::Kind;
using Source = BudgetRequest::Source;
using Scope = BudgetRequest::Scope;

BudgetLevel total(std::string v) { return {std::move(v), std::nullopt}; }
BudgetLevel each(std::string v) { return {std::nullopt, std::move(v)}; }

BudgetRequest resolve(const BudgetLevel& load, const BudgetLevel& baked) {
  auto r = resolve_budget_request(load, baked, "test");
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : BudgetRequest{};
}

TEST(DelegateBudget, PrecedenceAloneAndCombined) {
  // Nothing anywhere: automatic, for the program.
  BudgetRequest r = resolve({}, {});
  EXPECT_EQ(r.source, Source::kAutomatic);
  EXPECT_EQ(r.spec.kind, Kind::kAuto);
  EXPECT_FALSE(r.is_explicit());
  EXPECT_EQ(describe(r), "automatic");
  // Baked alone.
  r = resolve({}, total("8GiB"));
  EXPECT_EQ(r.source, Source::kCompileTime);
  EXPECT_EQ(r.scope, Scope::kProgram);
  EXPECT_EQ(r.spec.bytes, 8ull << 30);
  EXPECT_EQ(describe(r), "compile spec weight_streaming_budget=8 GiB");
  // Load time alone.
  r = resolve(each("50%"), {});
  EXPECT_EQ(r.source, Source::kLoadTime);
  EXPECT_EQ(r.scope, Scope::kPerEngine);
  EXPECT_EQ(r.spec.kind, Kind::kPercent);
  // Load time over baked, whatever the keys.
  r = resolve(each("1MiB"), total("8GiB"));
  EXPECT_EQ(r.source, Source::kLoadTime);
  EXPECT_EQ(r.scope, Scope::kPerEngine);
  EXPECT_EQ(r.spec.bytes, 1u << 20);
  r = resolve(total("auto"), each("8GiB"));
  EXPECT_EQ(r.source, Source::kLoadTime);
  EXPECT_EQ(r.spec.kind, Kind::kAuto);
  // An explicit "auto" at load time beats a baked byte count; is not "explicit" for logs.
  EXPECT_FALSE(r.is_explicit());
}

TEST(DelegateBudget, EmptyValuesWarnAndCountAsUnset) {
  ::testing::internal::CaptureStderr();
  BudgetRequest r = resolve(total(""), each("3KiB"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.source, Source::kCompileTime);
  EXPECT_EQ(r.spec.bytes, 3072u);
  EXPECT_NE(err.find("test: empty weight_streaming_budget ignored"), std::string::npos) << err;
  // An empty key next to a given one at the same level is not "both keys".
  r = resolve({std::string(""), std::string("1B")}, {});
  EXPECT_EQ(r.scope, Scope::kPerEngine);
  ::testing::internal::CaptureStderr();
  r = resolve(total(""), total(""));
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.source, Source::kAutomatic);
}

TEST(DelegateBudget, BothKeysOrAMalformedValueAtAnyLevelIsInvalidArgument) {
  auto both = resolve_budget_request({std::string("1GiB"), std::string("1GiB")}, {}, "where");
  EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(both.status().message().find("where: both weight_streaming_budget"), std::string::npos);
  EXPECT_NE(both.status().message().find("load-time option level"), std::string::npos) << both.status().to_string();
  auto baked_both = resolve_budget_request(total("1GiB"), {std::string("1"), std::string("2")}, "where");
  EXPECT_EQ(baked_both.status().code(), StatusCode::kInvalidArgument) << "a winning load-time value does not hide it";
  auto bad = resolve_budget_request({}, each("12 MiB"), "where");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("where: weight_streaming_budget_per_engine: invalid weight-streaming budget \"12 MiB\""),
            std::string::npos)
      << bad.status().to_string();
}

// floor(t * s_i / sum) plus one byte to the (n_left) largest remainders, ties to the lower
// index, by a naive loop over exact fractions.
std::vector<uint64_t> naive_split(uint64_t total, const std::vector<uint64_t>& sizes) {
  const uint64_t sum = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
  std::vector<uint64_t> out(sizes.size(), 0);
  if (sum == 0) return out;
  const uint64_t t = std::min(total, sum);
  std::vector<std::pair<uint64_t, size_t>> rem;
  uint64_t given = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const unsigned __int128 p = static_cast<unsigned __int128>(t) * sizes[i];
    out[i] = static_cast<uint64_t>(p / sum);
    given += out[i];
    rem.push_back({static_cast<uint64_t>(p % sum), i});
  }
  std::sort(rem.begin(), rem.end(), [](auto a, auto b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (size_t k = 0; given < t; ++k, ++given) out[rem[k].second]++;
  return out;
}

TEST(DelegateBudget, SplitIsExactAndProportional) {
  // By hand: sizes 2:3, total 1000001 -> 400000.4 / 600000.6 -> the byte left to engine 1.
  EXPECT_EQ(split_budget(1000001, std::vector<uint64_t>{524288, 786432}), (std::vector<uint64_t>{400000, 600001}));
  // Three equal engines, 10 bytes: 3.33 each, one byte left, to the first (tie).
  EXPECT_EQ(split_budget(10, std::vector<uint64_t>{7, 7, 7}), (std::vector<uint64_t>{4, 3, 3}));
  // Above the sum: each gets its size; zero sizes get nothing.
  EXPECT_EQ(split_budget(100, std::vector<uint64_t>{5, 0, 20}), (std::vector<uint64_t>{5, 0, 20}));
  EXPECT_EQ(split_budget(0, std::vector<uint64_t>{5, 20}), (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(split_budget(7, std::vector<uint64_t>{}), std::vector<uint64_t>{});
  EXPECT_EQ(split_budget(7, std::vector<uint64_t>{0, 0}), (std::vector<uint64_t>{0, 0}));
  // Huge values: 128-bit products.
  const uint64_t big = uint64_t{1} << 62;
  auto s = split_budget(UINT64_MAX, std::vector<uint64_t>{big, big / 3});
  EXPECT_EQ(s[0], big);
  EXPECT_EQ(s[1], big / 3);
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<uint64_t> sizes(1 + rng() % 6);
    for (auto& x : sizes) x = rng() % 4 == 0 ? 0 : rng() % (uint64_t{1} << (rng() % 40));
    const uint64_t sum = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
    const uint64_t t = sum ? rng() % (sum + sum / 4 + 1) : rng() % 100;
    auto got = split_budget(t, sizes);
    ASSERT_EQ(got, naive_split(t, sizes));
    EXPECT_EQ(std::accumulate(got.begin(), got.end(), uint64_t{0}), std::min(t, sum));
    for (size_t i = 0; i < sizes.size(); ++i) EXPECT_LE(got[i], sizes[i]);
  }
}

TEST(DelegateBudget, EngineBudgetsPerForm) {
  const std::vector<uint64_t> sizes = {524288, 0, 786432};
  int automatic_calls = 0;
  auto automatic = [&] {
    ++automatic_calls;
    return uint64_t{300000};
  };
  auto budgets = [&](BudgetLevel load) { return engine_budgets(resolve(load, {}), sizes, automatic); };
  EXPECT_EQ(budgets(total("1000001")), (std::vector<uint64_t>{400000, 0, 600001}));
  EXPECT_EQ(budgets(total("50%")), (std::vector<uint64_t>{262144, 0, 393216}));
  EXPECT_EQ(budgets(each("600000")), (std::vector<uint64_t>{524288, 0, 600000}));
  EXPECT_EQ(budgets(each("25%")), (std::vector<uint64_t>{131072, 0, 196608}));
  EXPECT_EQ(automatic_calls, 0) << "explicit budgets never ask for the automatic one";
  // Automatic, whichever key says "auto" and when nothing is given: computed once, split.
  EXPECT_EQ(budgets(total("auto")), (std::vector<uint64_t>{120000, 0, 180000}));
  EXPECT_EQ(budgets(each("auto")), (std::vector<uint64_t>{120000, 0, 180000}));
  EXPECT_EQ(budgets({}), (std::vector<uint64_t>{120000, 0, 180000}));
  EXPECT_EQ(automatic_calls, 3);
  // No streamable weights at all: the automatic budget is not even computed.
  EXPECT_EQ(engine_budgets(resolve({}, {}), std::vector<uint64_t>{0, 0}, automatic), (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(automatic_calls, 3);
}

TEST(DelegateBudget, OptionsAndCompileSpecsOfTheBackend) {
  BackendOptions o;
  o.set_option("weight_streaming_budget", "8GiB").set_option("weight_streaming_budget_per_engine", int64_t{4096});
  auto level = budget_level_from_options(o.view(), "w");
  ASSERT_TRUE(level.ok());
  EXPECT_EQ(level->total, "8GiB");
  EXPECT_EQ(level->per_engine, "4096");
  auto spec = [](std::string k, std::string v) { return CompileSpec{std::move(k), std::vector<uint8_t>(v.begin(), v.end())}; };
  std::vector<CompileSpec> specs = {spec("weight_streaming_budget", "1GiB"), spec("engine_index", "2"),
                                    spec("engine_count", "3")};
  auto baked = parse_compile_specs(specs);
  ASSERT_TRUE(baked.ok());
  EXPECT_EQ(baked->budget.total, "1GiB");
  EXPECT_FALSE(baked->budget.per_engine);
  EXPECT_EQ(baked->engine_index, 2u);
  EXPECT_EQ(baked->engine_count, 3u);
  for (const char* bad : {"", "x", "-1", "1 ", "99999999999"}) {
    specs[2] = spec("engine_count", bad);
    auto r = parse_compile_specs(specs);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidProgram) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace streamrt::delegate
