// Budget resolution and split for a program's StreamRT engines (see budget.h).
#include "delegate/budget.h"

#include <algorithm>
#include <numeric>

#include "core/logging.h"

namespace streamrt::delegate {
namespace {

uint64_t saturating_sum(std::span<const uint64_t> v) {
  uint64_t s = 0;
  for (uint64_t x : v) s = x > UINT64_MAX - s ? UINT64_MAX : s + x;
  return s;
}

const char* source_name(BudgetRequest::Source s) {
  switch (s) {
    case BudgetRequest::Source::kLoadTime: return "load-time option";
    case BudgetRequest::Source::kCompileTime: return "compile spec";
    case BudgetRequest::Source::kAutomatic: break;
  }
  return "automatic";
}

}  // namespace

std::string describe(const BudgetRequest& r) {
  if (r.source == BudgetRequest::Source::kAutomatic) return "automatic";
  return std::string(source_name(r.source)) + " " + r.key + "=" + format_budget(r.spec);
}

Result<std::optional<BudgetRequest>> parse_budget_level(const BudgetLevel& level, BudgetRequest::Source source,
                                                        const std::string& where) {
  std::optional<BudgetRequest> found;
  auto take = [&](const std::optional<std::string>& value, const char* key, BudgetRequest::Scope scope) -> Status {
    if (!value) return ok_status();
    auto spec = parse_budget(*value);
    if (!spec.ok()) return spec.status().with_context(where + ": " + key);
    if (spec->kind == BudgetSpec::Kind::kUnset) {
      log_warning(where + ": empty " + key + " ignored");
      return ok_status();
    }
    if (found)
      return invalid_argument(where + ": both " + kBudgetKey + " (a total for the program) and " +
                              kBudgetPerEngineKey + " (each engine's own) are given at the " + source_name(source) +
                              " level; give one");
    found = BudgetRequest{source, scope, *spec, key};
    return ok_status();
  };
  SRT_RETURN_IF_ERROR(take(level.total, kBudgetKey, BudgetRequest::Scope::kProgram));
  SRT_RETURN_IF_ERROR(take(level.per_engine, kBudgetPerEngineKey, BudgetRequest::Scope::kPerEngine));
  return found;
}

Result<BudgetRequest> resolve_budget_request(const BudgetLevel& load_time, const BudgetLevel& compile_time,
                                             const std::string& where) {
  SRT_ASSIGN_OR_RETURN(auto at_load, parse_budget_level(load_time, BudgetRequest::Source::kLoadTime, where));
  SRT_ASSIGN_OR_RETURN(auto baked, parse_budget_level(compile_time, BudgetRequest::Source::kCompileTime, where));
  if (at_load) return *at_load;
  if (baked) return *baked;
  BudgetRequest automatic;
  automatic.spec.kind = BudgetSpec::Kind::kAuto;
  return automatic;
}

std::vector<uint64_t> split_budget(uint64_t total, std::span<const uint64_t> sizes) {
  using u128 = unsigned __int128;
  const uint64_t sum = saturating_sum(sizes);
  std::vector<uint64_t> out(sizes.size(), 0);
  if (sum == 0) return out;
  // A sum that saturated cannot happen for real weights; sizes are then treated as if the
  // sum were exact, and every share still stays within its size.
  const uint64_t t = std::min(total, sum);
  std::vector<uint64_t> rem(sizes.size(), 0);
  uint64_t given = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const u128 p = static_cast<u128>(t) * sizes[i];
    out[i] = static_cast<uint64_t>(p / sum);
    rem[i] = static_cast<uint64_t>(p % sum);
    given += out[i];
  }
  // Fewer than sizes.size() bytes are left; they go to the largest remainders (whose shares
  // are below their sizes, since a remainder > 0 means the exact share was not reached).
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rem[a] > rem[b]; });
  for (size_t k = 0; given < t && k < order.size(); ++k)
    if (rem[order[k]] > 0) {
      ++out[order[k]];
      ++given;
    }
  return out;
}

std::vector<uint64_t> engine_budgets(const BudgetRequest& request, std::span<const uint64_t> sizes,
                                     const std::function<uint64_t()>& automatic) {
  const uint64_t sum = saturating_sum(sizes);
  if (request.spec.kind == BudgetSpec::Kind::kAuto || request.spec.kind == BudgetSpec::Kind::kUnset)
    return split_budget(sum == 0 ? 0 : automatic(), sizes);
  if (request.scope == BudgetRequest::Scope::kProgram)
    return split_budget(resolve_budget(request.spec, sum, 0), sizes);
  std::vector<uint64_t> out;
  for (uint64_t s : sizes) out.push_back(resolve_budget(request.spec, s, 0));
  return out;
}

}  // namespace streamrt::delegate
