// A cache entry: a weight-stripped plan and its metadata, a small JSON object:
//   {"format": 1, "key": "<64 hex>", "plan_bytes": N, "plan_sha256": "<64 hex>",
//    "created": <Unix seconds>, "engine_name": "...", "device": "cpu", "streamrt_version": "..."}
// The metadata is parsed as data only (no exceptions, every field type-checked) and limited to
// kMaxMetadataBytes; the plan goes through the plan reader's full verification afterwards.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "streamrt/cache.h"

namespace streamrt::cache {

inline constexpr int kEntryFormat = 1;
inline constexpr size_t kMaxMetadataBytes = 64 * 1024;

// An entry for `key` from a serialized weight-stripped plan (`plan` describes it).
CacheEntry make_entry(std::vector<uint8_t> stripped_plan, const CacheKey& key, const plan::PlanData& plan);

// OK when the metadata is well-formed, names `key` and the plan's size and SHA-256 match it;
// kInvalidPlan saying what differs otherwise.
Status verify_entry(const CacheEntry& entry, const CacheKey& key);

// Fields for listings; best effort (empty / 0 when the metadata is unreadable).
struct EntrySummary {
  std::string engine_name;
  int64_t created = 0;
};
EntrySummary summarize_metadata(const std::string& metadata);

}  // namespace streamrt::cache
