// Engine cache: skip rebuilding an engine that was built before for the same architecture.
//
// The key is a SHA-256 of the optimized graph's structure (ops, attributes, edges, value and I/O
// names, dtypes and dims; weight names, dtypes and dims but not weight values), every builder
// option, the target device and the plan format / streamrt version. Two exports of one model
// that differ only in their weight values share a key. An entry is a weight-stripped plan plus
// metadata (JSON: key, sizes, SHA-256 of the plan, creation time): data only, nothing in it is
// executed, and every load is verified. On a hit the current model's weights are refitted into
// the cached plan (see refit.h), so the result equals a fresh build of the current model.
//
//   auto dir = streamrt::default_cache_dir(std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
//   auto cache = streamrt::DiskEngineCache::open(dir.value(), 10ull << 30);
//   streamrt::CachedBuildInfo info;
//   auto plan = streamrt::build_plan_cached("model.onnx", config, **cache, &info);  // info.hit
//
// A user's own store (a database, an object store) plugs in by implementing EngineCache:
//
//   class MyStore : public streamrt::EngineCache {
//    public:
//     streamrt::Result<streamrt::CacheEntry> load(const streamrt::CacheKey& k) override {
//       auto blob = db_.get(k.hex());                        // your lookup
//       if (!blob) return streamrt::not_found("no entry " + k.hex());
//       return streamrt::CacheEntry{blob->plan, blob->metadata};
//     }
//     streamrt::Status save(const streamrt::CacheKey& k, const streamrt::CacheEntry& e) override {
//       db_.put(k.hex(), e.plan, e.metadata);  return streamrt::ok_status();
//     }
//     bool contains(const streamrt::CacheKey& k) override { return db_.has(k.hex()); }
//     streamrt::Status remove(const streamrt::CacheKey& k) override { db_.erase(k.hex()); return {}; }
//   };
//
// The store only keeps bytes: build_plan_cached verifies what load() returns (SHA-256 from the
// metadata, then the plan verifier) and removes and rebuilds an entry that fails.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "streamrt/builder.h"
#include "streamrt/status.h"

namespace streamrt {

struct CacheKey {
  std::array<uint8_t, 32> digest{};
  // 64 lowercase hex digits.
  std::string hex() const;
  // Parses hex(); kInvalidArgument for anything else.
  static Result<CacheKey> from_hex(std::string_view hex);
  bool operator==(const CacheKey&) const = default;
  auto operator<=>(const CacheKey&) const = default;
};

// A key and the digests of the parts it was computed from ("graph.nodes", "config.shapes",
// "device", ...), kept so that a miss can say which part changed. Records made by a build also
// hold the imported model's parts ("model.nodes", ...), which are not part of the key.
struct CacheKeyInfo {
  CacheKey key;
  std::map<std::string, std::string> components;  // part -> hex SHA-256
};

// Imports and optimizes `onnx_path` for `config` (as build_plan_from_onnx does) and computes
// its cache key.
Result<CacheKeyInfo> compute_cache_key(const std::string& onnx_path, const BuilderConfig& config);

// What a cache stores for a key.
struct CacheEntry {
  std::vector<uint8_t> plan;  // a weight-stripped plan file
  std::string metadata;       // JSON written by streamrt (key, sizes, SHA-256 of the plan, ...)
};

// Held by a builder while it builds a key; released on destruction.
class CacheLock {
 public:
  virtual ~CacheLock() = default;
};

class EngineCache {
 public:
  virtual ~EngineCache() = default;
  // The entry for `key`; kNotFound on a miss. A hit may refresh the entry's last-use time.
  virtual Result<CacheEntry> load(const CacheKey& key) = 0;
  // Stores (or replaces) the entry for `key`. A failure must leave no partial entry.
  virtual Status save(const CacheKey& key, const CacheEntry& entry) = 0;
  virtual bool contains(const CacheKey& key) = 0;
  // Removes the entry; OK when there is none.
  virtual Status remove(const CacheKey& key) = 0;
  // Blocks until no other builder holds `key`, so that concurrent builders of one key build it
  // once. The default (a store for one process) locks nothing and returns null.
  virtual Result<std::unique_ptr<CacheLock>> lock(const CacheKey& key);
  // Per-model record of the last key's components (for miss explanations). `model` is the
  // model's absolute path or the caller's label. The defaults keep nothing.
  virtual std::optional<CacheKeyInfo> last_key(const std::string& model);
  virtual void record_key(const std::string& model, const CacheKeyInfo& info);
};

// In-process cache (tests, short-lived use): unbounded, thread-safe, lost at exit.
class MemoryEngineCache : public EngineCache {
 public:
  Result<CacheEntry> load(const CacheKey& key) override;
  Status save(const CacheKey& key, const CacheEntry& entry) override;
  bool contains(const CacheKey& key) override;
  Status remove(const CacheKey& key) override;
  std::optional<CacheKeyInfo> last_key(const std::string& model) override;
  void record_key(const std::string& model, const CacheKeyInfo& info) override;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<CacheKey, CacheEntry> entries_;
  std::map<std::string, CacheKeyInfo> history_;
};

// One entry of a DiskEngineCache, for `streamrt cache list`.
struct DiskCacheEntryInfo {
  CacheKey key;
  uint64_t size = 0;        // bytes on disk (allocated blocks of the entry's files)
  int64_t created = 0;      // Unix seconds
  int64_t last_use = 0;     // Unix seconds: the last save or hit
  std::string engine_name;  // from the metadata ("" when unreadable)
};

struct PruneReport {
  size_t evicted = 0;       // entries removed to get under max_bytes
  size_t broken = 0;        // entries whose files were incomplete or failed their checksum
  size_t orphans = 0;       // leftovers of killed writers and stale lock files
  size_t skipped = 0;       // things streamrt did not write (other names, symlinks, FIFOs, ...): left in place
  uint64_t bytes_freed = 0;
};

// A cache directory shared by processes:
//   <dir>/STREAMRT_CACHE          marks the directory as streamrt's (see "Ownership" below)
//   <dir>/CACHEDIR.TAG            marks the directory as a cache (backup tools skip it)
//   <dir>/entries/<key hex>/      plan (weight-stripped), meta.json, last_use (its mtime)
//   <dir>/locks/<key hex>.lock    flock()ed by the builder of that key
//   <dir>/tmp/                    entries being written or removed
//   <dir>/models/<hash>.json      last key components per model path
// Entries appear atomically (written under tmp/, fsynced, renamed into entries/), so a writer
// killed at any point leaves no entry that loads; its leftovers are removed by later saves and
// prune(). After each save, least-recently-used entries are evicted until the entries' size on
// disk is at most max_bytes (sizes are measured on disk each time, so every process sees the
// others' entries). Corrupt entries (checksum) are removed by build_plan_cached and prune().
//
// Ownership: the cache removes and writes only what it wrote. open() refuses a non-empty
// directory without the STREAMRT_CACHE marker (unless it holds exactly an earlier streamrt's
// cache layout, which it adopts); removal touches only streamrt's own names, and never a
// symlink, FIFO, device or a directory where a file belongs (skipped and reported by prune and
// clear, a miss with a warning on load). Files are read with O_NOFOLLOW and O_NONBLOCK, so a
// FIFO entry cannot block. A cache that cannot be written (a read-only file system or
// directory) opens read-only: loads work, save / remove / prune / clear fail with kIoError.
class DiskEngineCache : public EngineCache {
 public:
  // Creates `dir` (and parents) when missing. kInvalidArgument for a directory that is not a
  // streamrt cache; kIoError for a path that is not a directory. A directory that cannot be
  // created or written opens read-only (read_only_reason() says why).
  static Result<std::unique_ptr<DiskEngineCache>> open(const std::string& dir, uint64_t max_bytes);

  Result<CacheEntry> load(const CacheKey& key) override;  // touches last_use
  // Skipped (OK, with a warning) when the entry alone is larger than max_bytes.
  Status save(const CacheKey& key, const CacheEntry& entry) override;
  bool contains(const CacheKey& key) override;
  Status remove(const CacheKey& key) override;
  Result<std::unique_ptr<CacheLock>> lock(const CacheKey& key) override;
  std::optional<CacheKeyInfo> last_key(const std::string& model) override;
  void record_key(const std::string& model, const CacheKeyInfo& info) override;

  // Every complete entry, least recently used first.
  Result<std::vector<DiskCacheEntryInfo>> list() const;
  // Sum of list()'s sizes.
  Result<uint64_t> total_size() const;
  // Verifies every entry (removing broken ones), removes killed writers' leftovers, then evicts
  // down to max_bytes.
  Result<PruneReport> prune();
  // Removes every entry and record.
  Result<PruneReport> clear();
  const std::string& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }
  // Why the cache cannot be written; empty when it can.
  const std::string& read_only_reason() const { return read_only_; }

 private:
  DiskEngineCache(std::string dir, uint64_t max_bytes, std::string read_only)
      : dir_(std::move(dir)), max_bytes_(max_bytes), read_only_(std::move(read_only)) {}
  std::string dir_;
  uint64_t max_bytes_;
  std::string read_only_;
};

// The default cache directory by the XDG base-directory rule: <xdg_cache_home>/streamrt/engines,
// else <home>/.cache/streamrt/engines, given the values of XDG_CACHE_HOME and HOME (null when
// unset; a relative path counts as unset). kNotFound when neither is an absolute path. The library
// reads no environment: the caller passes std::getenv("XDG_CACHE_HOME"), std::getenv("HOME").
Result<std::string> default_cache_dir(const char* xdg_cache_home, const char* home);
inline constexpr uint64_t kDefaultCacheMaxBytes = 10ull << 30;  // 10 GiB

// What build_plan_cached did.
struct CachedBuildInfo {
  bool hit = false;
  CacheKey key;
  // On a miss: why ("first build of this model", "builder option changed: float_precision",
  // "graph changed: nodes", "entry was evicted or removed", ...).
  std::string miss_reason;
  bool corrupt_entry_removed = false;  // a bad entry was found, removed and rebuilt
  bool saved = false;                  // a new entry was stored (and the cache has it)
  std::string save_error;              // why not, on a miss (the build still succeeded)
};

// Builds `onnx_path` for `config` through `cache`: a hit loads the cached stripped plan and
// refits the model's current weights; a miss builds, stores a stripped copy and returns the
// plan. Saving failures (disk full, read-only store) are warnings, not errors. The returned
// plan is stripped only when config.strip_weights.
Result<std::vector<uint8_t>> build_plan_cached(const std::string& onnx_path, const BuilderConfig& config,
                                               EngineCache& cache, CachedBuildInfo* info = nullptr,
                                               BuildReport* report = nullptr);
// Same, writing the plan to `plan_path` atomically.
Status build_plan_file_cached(const std::string& onnx_path, const BuilderConfig& config, EngineCache& cache,
                              const std::string& plan_path, CachedBuildInfo* info = nullptr,
                              BuildReport* report = nullptr);

}  // namespace streamrt
