#include "cache/entry.h"

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "cache/sha256.h"

namespace streamrt::cache {
namespace {

using Json = nlohmann::json;

// Nesting of '[' / '{' outside strings. The metadata streamrt writes is one flat object; a deep
// one (60 000 '[' fit in 64 KiB) would cost a recursive DOM build and teardown per read.
int max_nesting(const std::string& text) {
  int depth = 0, most = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      most = std::max(most, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return most;
}

// Parses without exceptions; a discarded value for anything that is not one JSON object.
Json parse_object(const std::string& text) {
  constexpr int kMaxNesting = 8;
  if (text.size() > kMaxMetadataBytes || max_nesting(text) > kMaxNesting) return Json(Json::value_t::discarded);
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : Json(Json::value_t::discarded);
}

const std::string* string_field(const Json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

bool uint_field(const Json& j, const char* name, uint64_t* out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_unsigned()) return false;
  *out = it->get<uint64_t>();
  return true;
}

}  // namespace

CacheEntry make_entry(std::vector<uint8_t> stripped_plan, const CacheKey& key, const plan::PlanData& plan) {
  Json j;
  j["format"] = kEntryFormat;
  j["key"] = key.hex();
  j["plan_bytes"] = static_cast<uint64_t>(stripped_plan.size());
  j["plan_sha256"] = to_hex(sha256(stripped_plan.data(), stripped_plan.size()));
  j["created"] = static_cast<uint64_t>(std::time(nullptr));
  j["engine_name"] = plan.name;
  j["device"] = plan.device.kind == plan::DeviceKind::kCuda ? "cuda" : "cpu";
  j["streamrt_version"] = plan.streamrt_version;
  // Names are arbitrary bytes; replace invalid UTF-8 rather than throw.
  return CacheEntry{std::move(stripped_plan), j.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

Status verify_entry(const CacheEntry& entry, const CacheKey& key) {
  const std::string where = "cache entry " + key.hex();
  Json j = parse_object(entry.metadata);
  if (j.is_discarded()) return invalid_plan(where + ": metadata is not a JSON object of at most 64 KiB and 8 levels of nesting");
  uint64_t format = 0, bytes = 0;
  if (!uint_field(j, "format", &format) || format != kEntryFormat)
    return invalid_plan(where + ": metadata format is not " + std::to_string(kEntryFormat));
  const std::string* k = string_field(j, "key");
  if (!k || *k != key.hex()) return invalid_plan(where + ": metadata names another key");
  if (!uint_field(j, "plan_bytes", &bytes) || bytes != entry.plan.size())
    return invalid_plan(where + ": plan has " + std::to_string(entry.plan.size()) + " bytes, the metadata says " +
                        (uint_field(j, "plan_bytes", &bytes) ? std::to_string(bytes) : "nothing"));
  const std::string* sum = string_field(j, "plan_sha256");
  std::string got = to_hex(sha256(entry.plan.data(), entry.plan.size()));
  if (!sum || *sum != got)
    return invalid_plan(where + ": plan checksum mismatch (metadata " + (sum ? *sum : std::string("none")) +
                        ", computed " + got + ")");
  return ok_status();
}

EntrySummary summarize_metadata(const std::string& metadata) {
  EntrySummary s;
  Json j = parse_object(metadata);
  if (j.is_discarded()) return s;
  if (const std::string* n = string_field(j, "engine_name")) s.engine_name = *n;
  uint64_t created = 0;
  if (uint_field(j, "created", &created)) s.created = static_cast<int64_t>(created);
  return s;
}

}  // namespace streamrt::cache
