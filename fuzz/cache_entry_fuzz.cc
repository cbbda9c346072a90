// libFuzzer target for engine-cache entries (src/cache/entry.cc): the metadata JSON and the
// checks that decide whether a stored entry may be used. Input: "<metadata>\0<plan bytes>",
// verified against the all-zero key. A rejection must be kInvalidPlan; an accepted entry's
// plan then goes through the plan reader, as build_plan_cached does.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cache/entry.h"
#include "plan/plan.h"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  streamrt::CacheEntry entry;
  entry.metadata = std::string(all.substr(0, nul));
  if (nul != std::string_view::npos) entry.plan.assign(data + nul + 1, data + size);
  const streamrt::CacheKey key;  // all zeros
  streamrt::Status st = streamrt::cache::verify_entry(entry, key);
  (void)streamrt::cache::summarize_metadata(entry.metadata);
  (void)streamrt::CacheKey::from_hex(entry.metadata);
  if (!st.ok()) {
    check(st.code() == streamrt::StatusCode::kInvalidPlan);
    check(st.message().find("cache entry " + key.hex()) == 0);
    return 0;
  }
  auto plan = streamrt::plan::read_plan_bytes(entry.plan.data(), entry.plan.size(), nullptr);
  check(plan.ok() || plan.status().code() == streamrt::StatusCode::kInvalidPlan ||
        plan.status().code() == streamrt::StatusCode::kIncompatible);
  return 0;
}
