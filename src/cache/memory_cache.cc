// EngineCache defaults and the in-process MemoryEngineCache.
#include "streamrt/cache.h"

namespace streamrt {

Result<std::unique_ptr<CacheLock>> EngineCache::lock(const CacheKey&) { return std::unique_ptr<CacheLock>(); }
std::optional<CacheKeyInfo> EngineCache::last_key(const std::string&) { return std::nullopt; }
void EngineCache::record_key(const std::string&, const CacheKeyInfo&) {}

Result<CacheEntry> MemoryEngineCache::load(const CacheKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return not_found("no cache entry " + key.hex());
  return it->second;
}

Status MemoryEngineCache::save(const CacheKey& key, const CacheEntry& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key] = entry;
  return ok_status();
}

bool MemoryEngineCache::contains(const CacheKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.count(key) != 0;
}

Status MemoryEngineCache::remove(const CacheKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(key);
  return ok_status();
}

std::optional<CacheKeyInfo> MemoryEngineCache::last_key(const std::string& model) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = history_.find(model);
  if (it == history_.end()) return std::nullopt;
  return it->second;
}

void MemoryEngineCache::record_key(const std::string& model, const CacheKeyInfo& info) {
  std::lock_guard<std::mutex> lock(mutex_);
  history_[model] = info;
}

size_t MemoryEngineCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace streamrt
