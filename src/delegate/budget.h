// Weight-streaming budgets of a program's StreamRT engines: which value is in force (load-time
// option, then the value baked at compile time, then automatic) and how it becomes one budget
// per engine. Pure functions: no engines, no program runtime types.
//
// Two keys, at each level (load time and compile time):
//   weight_streaming_budget             the program's total, split across its engines in
//                                       proportion to their streamable sizes (exactly: the
//                                       shares add up to the total, clamped to the sum of sizes)
//   weight_streaming_budget_per_engine  each engine's own budget (bytes: the same for every
//                                       engine, clamped to its size; a percentage: of its size)
// Values are budget strings (src/core/byte_size.h). Both keys at one level is kInvalidArgument;
// so is a malformed value, naming the key and the value. An empty value logs a warning and
// counts as not given. A level that gives neither key leaves the choice to the next level; when
// no level gives one, or the value is "auto", the program's automatic budget (computed once for
// all its engines, never per engine) is split like a total.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/byte_size.h"

namespace streamrt::delegate {

inline constexpr char kBudgetKey[] = "weight_streaming_budget";
inline constexpr char kBudgetPerEngineKey[] = "weight_streaming_budget_per_engine";

// The raw values one level gives (nullopt: key absent).
struct BudgetLevel {
  std::optional<std::string> total;
  std::optional<std::string> per_engine;
};

struct BudgetRequest {
  enum class Source { kLoadTime, kCompileTime, kAutomatic };
  enum class Scope { kProgram, kPerEngine };
  Source source = Source::kAutomatic;
  Scope scope = Scope::kProgram;
  BudgetSpec spec;  // kAuto for Source::kAutomatic
  std::string key;  // the key it came from (empty for automatic)
  // True when the budget was asked for explicitly (bytes or a percentage): applied to an
  // engine without streamable weights it is logged and ignored.
  bool is_explicit() const { return spec.kind == BudgetSpec::Kind::kBytes || spec.kind == BudgetSpec::Kind::kPercent; }
};

// "load-time option weight_streaming_budget=8 GiB", "automatic", ...
std::string describe(const BudgetRequest& r);

// Parses one level: kInvalidArgument when both keys are given (non-empty) or a value is
// malformed ("<where>: weight_streaming_budget: budget \"8gb\" ..."). An empty value warns
// ("<where>: empty weight_streaming_budget ignored") and counts as absent. Returns nullopt
// when the level asks for nothing.
Result<std::optional<BudgetRequest>> parse_budget_level(const BudgetLevel& level, BudgetRequest::Source source,
                                                        const std::string& where);

// The request in force: load time, then compile time, then automatic. Both levels are
// validated even when the first one wins, so a malformed baked value never hides.
Result<BudgetRequest> resolve_budget_request(const BudgetLevel& load_time, const BudgetLevel& compile_time,
                                             const std::string& where);

// Splits `total` across engines of `sizes` streamable bytes in proportion to them: every
// share is at most its size, and the shares add up to min(total, sum of sizes) exactly
// (largest remainders get the leftover bytes, ties to the lower index).
std::vector<uint64_t> split_budget(uint64_t total, std::span<const uint64_t> sizes);

// One budget per engine for `request`; `automatic` is called at most once, and only when the
// request needs it. Engines of size 0 get 0.
std::vector<uint64_t> engine_budgets(const BudgetRequest& request, std::span<const uint64_t> sizes,
                                     const std::function<uint64_t()>& automatic);

}  // namespace streamrt::delegate
