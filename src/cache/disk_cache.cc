// DiskEngineCache: the layout and guarantees are documented in include/streamrt/cache.h.
//
// Crash safety. A save writes a staging directory tmp/stage-<key>-<pid>-<n>/ (plan, meta.json,
// last_use, each fsynced, then the directory) and renames it to entries/<key> in one step; a
// reader sees either no entry or a complete one. While writing, the saver holds an flock() on
// tmp/stage-...lock, created BEFORE the directory and unlinked AFTER it is gone, so a staging
// directory whose lock file can be locked (or is missing) belongs to a dead writer and is
// removed. Removal renames entries/<key> to tmp/dead-... first, then deletes it.
//
// Build locks. locks/<key>.lock is flock()ed by the builder of a key. A lock file may be
// unlinked by prune() (only while it is unlocked); a locker therefore checks after flock() that
// the path still names the file it locked, and retries otherwise.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cache/entry.h"
#include "cache/fault_injection.h"
#include "cache/file_util.h"
#include "cache/sha256.h"
#include "core/logging.h"
#include "streamrt/cache.h"

namespace streamrt {

namespace cache::testing {
namespace {
FaultHook& hook() {
  static FaultHook h;
  return h;
}
}  // namespace
void set_fault_hook(FaultHook h) { hook() = std::move(h); }
Status fault(const std::string& step) { return hook() ? hook()(step) : ok_status(); }
}  // namespace cache::testing

namespace {

using namespace cache;

constexpr uint64_t kMaxPlanBytes = 1ull << 30;  // a stripped plan is metadata only
constexpr char kPlanFile[] = "plan";
constexpr char kMetaFile[] = "meta.json";
constexpr char kLastUseFile[] = "last_use";

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

// An flock()ed file descriptor, unlocked and closed on destruction.
class FileLock : public CacheLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {}
  ~FileLock() override {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

bool same_file(int fd, const std::string& path) {
  struct stat a {}, b {};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Takes `path`'s lock without waiting and, if that worked, unlinks it while holding it.
// True when the file was unlocked (its owner is gone) and is now removed.
bool remove_if_unlocked(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  bool removed = false;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && same_file(fd, path)) removed = ::unlink(path.c_str()) == 0;
  ::close(fd);
  return removed;
}

struct Scanned {
  DiskCacheEntryInfo info;
  int64_t last_use_ns = 0;
};

}  // namespace

Result<std::string> default_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/streamrt/engines";
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/streamrt/engines";
  return not_found("no cache directory: set XDG_CACHE_HOME or HOME to an absolute path, or pass --cache-dir");
}

Result<std::unique_ptr<DiskEngineCache>> DiskEngineCache::open(const std::string& dir, uint64_t max_bytes) {
  if (dir.empty()) return invalid_argument("engine cache directory is empty");
  for (const char* sub : {"entries", "locks", "tmp", "models"})
    SRT_RETURN_IF_ERROR(make_dirs(dir + "/" + sub));
  const std::string tag = dir + "/CACHEDIR.TAG";
  if (::access(tag.c_str(), F_OK) != 0) {
    static const char kTag[] =
        "Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by streamrt (engine cache).\n";
    std::string tmp = dir + "/tmp/tag-" + unique_suffix();
    if (write_new_file(tmp, kTag, sizeof(kTag) - 1).ok()) ::rename(tmp.c_str(), tag.c_str());
    ::unlink(tmp.c_str());
  }
  if (::access((dir + "/tmp").c_str(), W_OK) != 0) return errno_status("cannot write to the engine cache", dir);
  return std::unique_ptr<DiskEngineCache>(new DiskEngineCache(dir, max_bytes));
}

namespace {

std::string entry_dir(const std::string& dir, const CacheKey& key) { return dir + "/entries/" + key.hex(); }

// Removes an entry atomically (rename out of entries/, then delete). OK when absent.
Status remove_entry(const std::string& dir, const CacheKey& key) {
  std::string from = entry_dir(dir, key), to = dir + "/tmp/dead-" + key.hex() + "-" + unique_suffix();
  if (::rename(from.c_str(), to.c_str()) != 0) {
    if (errno == ENOENT) return ok_status();
    return errno_status("cannot remove cache entry", from);
  }
  remove_tree(to);
  return ok_status();
}

// Reads and verifies an entry. kNotFound when absent; kInvalidPlan when it fails verification.
Result<CacheEntry> read_entry(const std::string& dir, const CacheKey& key) {
  const std::string d = entry_dir(dir, key);
  auto plan = read_file(d + "/" + kPlanFile, kMaxPlanBytes);
  if (!plan.ok()) {
    if (plan.status().code() == StatusCode::kNotFound && ::access(d.c_str(), F_OK) != 0)
      return not_found("no cache entry " + key.hex());
    return invalid_plan("cache entry " + key.hex() + ": " + plan.status().message());
  }
  auto meta = read_file(d + "/" + kMetaFile, kMaxMetadataBytes);
  if (!meta.ok()) return invalid_plan("cache entry " + key.hex() + ": " + meta.status().message());
  CacheEntry e{std::move(plan).value(), std::string(meta->begin(), meta->end())};
  SRT_RETURN_IF_ERROR(verify_entry(e, key));
  return e;
}

// Every complete entry with its size on disk and last use, least recently used first; with
// `details`, also its creation time and engine name (from the metadata).
std::vector<Scanned> scan(const std::string& dir, bool details = false) {
  std::vector<Scanned> out;
  for (const std::string& name : list_dir(dir + "/entries")) {
    auto key = CacheKey::from_hex(name);
    if (!key.ok()) continue;
    const std::string d = dir + "/entries/" + name;
    int64_t created_ns = mtime_ns(d + "/" + kPlanFile);
    if (created_ns == 0) continue;  // being removed
    Scanned s;
    s.info.key = *key;
    s.info.size = disk_usage(d);
    s.last_use_ns = mtime_ns(d + "/" + kLastUseFile);
    if (s.last_use_ns == 0) s.last_use_ns = created_ns;
    s.info.last_use = s.last_use_ns / 1000000000;
    s.info.created = created_ns / 1000000000;
    if (details) {
      auto meta = read_file(d + "/" + kMetaFile, kMaxMetadataBytes);
      EntrySummary sum = meta.ok() ? summarize_metadata(std::string(meta->begin(), meta->end())) : EntrySummary{};
      s.info.engine_name = sum.engine_name;
      if (sum.created) s.info.created = sum.created;
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const Scanned& a, const Scanned& b) {
    return a.last_use_ns != b.last_use_ns ? a.last_use_ns < b.last_use_ns : a.info.key < b.info.key;
  });
  return out;
}

bool older_than_an_hour(const std::string& path) {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  int64_t t = mtime_ns(path);
  return t != 0 && static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec - t > 3600ll * 1000000000;
}

// True when `name` (<prefix>-<pid>-<n>, from unique_suffix) was made by a process that no longer
// exists on this host. A cache shared between hosts could see another host's live writer as
// gone; removing its temporary file then only makes that writer's save fail with a warning.
bool writer_is_gone(const std::string& name) {
  const size_t a = name.find('-'), b = a == std::string::npos ? a : name.find('-', a + 1);
  if (b == std::string::npos || b == a + 1) return false;
  pid_t pid = 0;
  for (size_t i = a + 1; i < b; ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 1000000000) return false;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

// Removes what killed writers and removers left in tmp/. Returns how many leftovers.
size_t clean_tmp(const std::string& dir) {
  const std::string tmp = dir + "/tmp";
  size_t removed = 0;
  for (const std::string& name : list_dir(tmp)) {
    const std::string path = tmp + "/" + name;
    if (name.rfind("dead-", 0) == 0) {
      remove_tree(path);
      ++removed;
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0) {
      // A writer holds this lock (it was locked before it got this name) until its staging
      // directory is gone: a lock we can take belongs to a dead writer.
      std::string stage = path.substr(0, path.size() - 5);
      int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) continue;
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        remove_tree(stage);
        ::unlink(path.c_str());
        ++removed;
      }
      ::close(fd);
    } else if (name.rfind("stage-", 0) == 0) {
      // (Its lock may have been handled above, removing it already.)
      if (::access((path + ".lock").c_str(), F_OK) != 0 && ::access(path.c_str(), F_OK) == 0) {
        remove_tree(path);  // its lock is gone, so its writer is too
        ++removed;
      }
    } else if (older_than_an_hour(path) || writer_is_gone(name)) {
      // lk-, tag- and model- files are renamed within moments of their creation: an old one, or
      // one whose process no longer exists on this host, was left by a crash.
      ::unlink(path.c_str());
      ++removed;
    }
  }
  return removed;
}

// Writes the entry in a staging directory and renames it into place. The caller holds `lock_path`.
Status stage_and_publish(const std::string& dir, const CacheKey& key, const CacheEntry& entry,
                         const std::string& stage) {
  SRT_RETURN_IF_ERROR(testing::fault("stage"));
  if (::mkdir(stage.c_str(), 0755) != 0) return errno_status("cannot create", stage);
  SRT_RETURN_IF_ERROR(write_new_file(stage + "/" + kPlanFile, entry.plan.data(), entry.plan.size()));
  SRT_RETURN_IF_ERROR(write_new_file(stage + "/" + kMetaFile, entry.metadata.data(), entry.metadata.size()));
  SRT_RETURN_IF_ERROR(write_new_file(stage + "/" + kLastUseFile, "", 0));
  SRT_RETURN_IF_ERROR(touch(stage + "/" + kLastUseFile));
  SRT_RETURN_IF_ERROR(sync_dir(stage));
  SRT_RETURN_IF_ERROR(testing::fault("rename"));
  const std::string target = entry_dir(dir, key);
  for (int attempt = 0; ::rename(stage.c_str(), target.c_str()) != 0; ++attempt) {
    if ((errno != ENOTEMPTY && errno != EEXIST) || attempt == 2) return errno_status("cannot rename " + stage + " to", target);
    SRT_RETURN_IF_ERROR(remove_entry(dir, key));  // replace the old entry
  }
  return sync_dir(dir + "/entries");
}

}  // namespace

Result<CacheEntry> DiskEngineCache::load(const CacheKey& key) {
  auto e = read_entry(dir_, key);
  if (!e.ok()) {
    if (e.status().code() == StatusCode::kInvalidPlan) {
      // The caller (build_plan_cached) warns; here the entry only goes away.
      Status removed = remove_entry(dir_, key);
      return invalid_plan(e.status().message() + (removed.ok() ? "; removed" : "; removing it failed: " + removed.message()));
    }
    return e.status();
  }
  // The entry may have been removed since it was read; then there is nothing to touch.
  (void)touch(entry_dir(dir_, key) + "/" + kLastUseFile);
  return e;
}

Status DiskEngineCache::save(const CacheKey& key, const CacheEntry& entry) {
  uint64_t bytes = entry.plan.size() + entry.metadata.size();
  if (bytes > max_bytes_) {
    log_warning("engine cache: entry " + key.hex() + " (" + std::to_string(bytes) + " bytes) is larger than the cache (" +
                std::to_string(max_bytes_) + " bytes); not stored");
    return ok_status();
  }
  clean_tmp(dir_);
  const std::string stage = dir_ + "/tmp/stage-" + key.hex() + "-" + unique_suffix();
  const std::string lock_path = stage + ".lock";
  // The lock is taken under a temporary name and then renamed, so that its final name never
  // exists unlocked while this writer lives (clean_tmp reads an unlocked name as a dead writer).
  const std::string lock_tmp = dir_ + "/tmp/lk-" + unique_suffix();
  int fd = ::open(lock_tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("cannot create", lock_tmp);
  Status st = ::flock(fd, LOCK_EX) == 0 ? ok_status() : errno_status("cannot lock", lock_tmp);
  if (st.ok() && ::rename(lock_tmp.c_str(), lock_path.c_str()) != 0) st = errno_status("cannot rename", lock_tmp);
  ::unlink(lock_tmp.c_str());
  if (st.ok()) st = stage_and_publish(dir_, key, entry, stage);
  remove_tree(stage);  // gone after a successful rename; a partial one after a failure
  ::unlink(lock_path.c_str());
  ::close(fd);
  if (!st.ok()) return st.with_context("engine cache: saving " + key.hex());
  SRT_RETURN_IF_ERROR(testing::fault("evict"));
  return evict(&key, nullptr);
}

bool DiskEngineCache::contains(const CacheKey& key) {
  const std::string d = entry_dir(dir_, key);
  return ::access((d + "/" + kPlanFile).c_str(), F_OK) == 0 && ::access((d + "/" + kMetaFile).c_str(), F_OK) == 0;
}

Status DiskEngineCache::remove(const CacheKey& key) { return remove_entry(dir_, key); }

Result<std::unique_ptr<CacheLock>> DiskEngineCache::lock(const CacheKey& key) {
  const std::string path = dir_ + "/locks/" + key.hex() + ".lock";
  for (;;) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return errno_status("cannot open lock file", path);
    int rc;
    while ((rc = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      Status st = errno_status("cannot lock", path);
      ::close(fd);
      return st;
    }
    if (same_file(fd, path)) return std::unique_ptr<CacheLock>(new FileLock(fd));
    ::close(fd);  // prune() removed the file we waited on: lock the new one
  }
}

Status DiskEngineCache::evict(const CacheKey* keep, PruneReport* report) {
  std::vector<Scanned> entries = scan(dir_);
  uint64_t total = 0;
  for (const Scanned& s : entries) total += s.info.size;
  for (const Scanned& s : entries) {
    if (total <= max_bytes_) break;
    if (keep && s.info.key == *keep) continue;
    SRT_RETURN_IF_ERROR(remove_entry(dir_, s.info.key));
    total -= s.info.size;
    log_info("engine cache: evicted " + s.info.key.hex() + " (" + std::to_string(s.info.size) + " bytes)");
    if (report) {
      ++report->evicted;
      report->bytes_freed += s.info.size;
    }
  }
  return ok_status();
}

Result<std::vector<DiskCacheEntryInfo>> DiskEngineCache::list() const {
  if (::access((dir_ + "/entries").c_str(), R_OK) != 0) return errno_status("cannot read the engine cache", dir_);
  std::vector<DiskCacheEntryInfo> out;
  for (Scanned& s : scan(dir_, /*details=*/true)) out.push_back(std::move(s.info));
  return out;
}

Result<uint64_t> DiskEngineCache::total_size() const {
  SRT_ASSIGN_OR_RETURN(auto entries, list());
  uint64_t total = 0;
  for (const auto& e : entries) total += e.size;
  return total;
}

Result<PruneReport> DiskEngineCache::prune() {
  PruneReport rep;
  rep.orphans = clean_tmp(dir_);
  for (const Scanned& s : scan(dir_)) {
    auto e = read_entry(dir_, s.info.key);
    if (e.ok() || e.status().code() != StatusCode::kInvalidPlan) continue;
    log_warning(e.status().message() + "; removed it");
    SRT_RETURN_IF_ERROR(remove_entry(dir_, s.info.key));
    ++rep.broken;
    rep.bytes_freed += s.info.size;
  }
  for (const std::string& name : list_dir(dir_ + "/locks"))
    if (remove_if_unlocked(dir_ + "/locks/" + name)) ++rep.orphans;
  SRT_RETURN_IF_ERROR(evict(nullptr, &rep));
  return rep;
}

Result<PruneReport> DiskEngineCache::clear() {
  PruneReport rep;
  rep.orphans = clean_tmp(dir_);
  for (const Scanned& s : scan(dir_)) {
    SRT_RETURN_IF_ERROR(remove_entry(dir_, s.info.key));
    ++rep.evicted;
    rep.bytes_freed += s.info.size;
  }
  for (const std::string& name : list_dir(dir_ + "/models")) ::unlink((dir_ + "/models/" + name).c_str());
  for (const std::string& name : list_dir(dir_ + "/locks"))
    if (remove_if_unlocked(dir_ + "/locks/" + name)) ++rep.orphans;
  return rep;
}

// ---- per-model key records (miss explanations) ---------------------------------------------

namespace {
std::string record_path(const std::string& dir, const std::string& model) {
  return dir + "/models/" + sha256_hex(model) + ".json";
}
}  // namespace

std::optional<CacheKeyInfo> DiskEngineCache::last_key(const std::string& model) {
  auto bytes = read_file(record_path(dir_, model), kMaxMetadataBytes);
  if (!bytes.ok()) return std::nullopt;
  auto j = nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto m = j.find("model"), k = j.find("key"), c = j.find("components");
  if (m == j.end() || !m->is_string() || m->get_ref<const std::string&>() != model) return std::nullopt;
  if (k == j.end() || !k->is_string() || c == j.end() || !c->is_object()) return std::nullopt;
  auto key = CacheKey::from_hex(k->get_ref<const std::string&>());
  if (!key.ok()) return std::nullopt;
  CacheKeyInfo info;
  info.key = *key;
  for (auto it = c->begin(); it != c->end(); ++it)
    if (it.value().is_string()) info.components[it.key()] = it.value().get<std::string>();
  return info;
}

void DiskEngineCache::record_key(const std::string& model, const CacheKeyInfo& info) {
  nlohmann::json j;
  j["model"] = model;
  j["key"] = info.key.hex();
  j["components"] = info.components;
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string tmp = dir_ + "/tmp/model-" + unique_suffix();
  Status st = write_new_file(tmp, text.data(), text.size());
  if (st.ok() && ::rename(tmp.c_str(), record_path(dir_, model).c_str()) != 0)
    st = errno_status("cannot rename", tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    log_warning("engine cache: cannot record the key of '" + model + "': " + st.message());
  }
}

}  // namespace streamrt
