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
//
// Ownership (layout.h). Everything here touches only names of streamrt's patterns, and only
// regular files and real directories; anything else is skipped and reported by prune/clear.
// A cache that cannot be written (read_only_) is read, never changed.
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
#include "cache/layout.h"
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
  return ::fstat(fd, &a) == 0 && ::lstat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Takes the lock of the regular file `path` without waiting and, if that worked, unlinks it
// while holding it. True when the file was unlocked (its owner is gone) and is now removed.
bool remove_if_unlocked(const std::string& path) {
  auto fd = open_regular(path, O_RDWR);
  if (!fd.ok()) return false;
  bool removed = false;
  if (::flock(*fd, LOCK_EX | LOCK_NB) == 0 && same_file(*fd, path)) removed = ::unlink(path.c_str()) == 0;
  ::close(*fd);
  return removed;
}

// kIoError when the cache cannot be written (`read_only` says why).
Status check_writable(const std::string& dir, const std::string& read_only) {
  if (read_only.empty()) return ok_status();
  return io_error("the engine cache '" + dir + "' cannot be written (" + read_only + "); nothing changed there");
}

// What prune() and clear() left in place (names and files streamrt did not write), for the report.
struct Skipped {
  std::vector<std::string> why;
  void add(std::string reason) { why.push_back(std::move(reason)); }
};

struct Scanned {
  DiskCacheEntryInfo info;
  int64_t last_use_ns = 0;
};

}  // namespace

Result<std::string> default_cache_dir(const char* xdg, const char* home) {
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/streamrt/engines";
  if (home && home[0] == '/') return std::string(home) + "/.cache/streamrt/engines";
  return not_found("no cache directory: set XDG_CACHE_HOME or HOME to an absolute path, or pass --cache-dir");
}

Result<std::unique_ptr<DiskEngineCache>> DiskEngineCache::open(const std::string& dir, uint64_t max_bytes) {
  if (dir.empty()) return invalid_argument("engine cache directory is empty");
  SRT_ASSIGN_OR_RETURN(std::string read_only, prepare_cache_dir(dir));
  return std::unique_ptr<DiskEngineCache>(new DiskEngineCache(dir, max_bytes, std::move(read_only)));
}

namespace {

std::string entry_dir(const std::string& dir, const CacheKey& key) { return dir + "/entries/" + key.hex(); }

// Removes an entry atomically (rename out of entries/, then delete its files). OK when absent;
// kInvalidState, changing nothing, when it holds anything streamrt did not write.
Status remove_entry(const std::string& dir, const CacheKey& key) {
  const std::string from = entry_dir(dir, key), to = dir + "/tmp/dead-" + key.hex() + "-" + unique_suffix();
  SRT_RETURN_IF_ERROR(check_entry_dir(from));
  if (::rename(from.c_str(), to.c_str()) != 0) {
    if (errno == ENOENT) return ok_status();
    return errno_status("cannot remove cache entry", from);
  }
  return remove_entry_dir(to);
}

// Reads and verifies an entry. kNotFound when absent; kInvalidPlan when it fails verification.
// An entry holding anything streamrt did not write (a FIFO, a symlink) is a kInvalidState miss.
Result<CacheEntry> read_entry(const std::string& dir, const CacheKey& key) {
  const std::string d = entry_dir(dir, key);
  if (Status own = check_entry_dir(d); !own.ok()) return own.with_context("cache entry " + key.hex());
  auto plan = read_file(d + "/" + kPlanFile, kMaxPlanBytes);
  if (!plan.ok()) {
    if (plan.status().code() == StatusCode::kNotFound && file_type(d) == FileType::kMissing)
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
// Names that are not entries are reported to `skipped` (when given).
std::vector<Scanned> scan(const std::string& dir, bool details = false, Skipped* skipped = nullptr) {
  std::vector<Scanned> out;
  for (const std::string& name : list_dir(dir + "/entries")) {
    const std::string d = dir + "/entries/" + name;
    mode_t mode = 0;
    const FileType type = file_type(d, &mode);
    auto key = CacheKey::from_hex(name);
    if (!is_hex64(name) || !key.ok() || type != FileType::kDirectory) {
      if (skipped && type != FileType::kMissing)
        skipped->add("'" + d + "' is " + (is_hex64(name) ? describe_mode(mode) + ", not an entry" : "not an entry") +
                     " streamrt made; left in place");
      continue;
    }
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

// True when the process that made tmp/`name` (<...>-<pid>-<n>) no longer exists on this host. A
// cache shared between hosts could see another host's live writer as gone; removing its
// temporary file then only makes that writer's save fail with a warning.
bool writer_is_gone(const std::string& name) {
  const long pid = tmp_name_pid(name);
  return pid > 0 && pid <= 1000000000 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Removes what killed writers and removers left in tmp/ (only streamrt's names: layout.h).
// Returns how many leftovers; what is not streamrt's goes to `skipped` (when given).
size_t clean_tmp(const std::string& dir, Skipped* skipped = nullptr) {
  const std::string tmp = dir + "/tmp";
  size_t removed = 0;
  auto skip = [&](std::string why) {
    if (skipped) skipped->add(std::move(why));
  };
  auto remove_dir = [&](const std::string& path) {
    Status st = remove_entry_dir(path);
    if (st.ok()) ++removed;
    else skip(st.message());
    return st.ok();
  };
  for (const std::string& name : list_dir(tmp)) {
    const std::string path = tmp + "/" + name;
    mode_t mode = 0;
    const FileType type = file_type(path, &mode);
    const TmpKind kind = classify_tmp(name);
    const bool dir_kind = kind == TmpKind::kDead || kind == TmpKind::kStage;
    if (type == FileType::kMissing) continue;  // handled with its lock, or by another process
    if (kind == TmpKind::kForeign || type != (dir_kind ? FileType::kDirectory : FileType::kRegular)) {
      skip("'" + path + "' is " + (kind == TmpKind::kForeign ? "not a name streamrt uses" : describe_mode(mode)) +
           "; left in place");
      continue;
    }
    if (kind == TmpKind::kDead) {
      remove_dir(path);
    } else if (kind == TmpKind::kStageLock) {
      // A writer holds this lock (it was locked before it got this name) until its staging
      // directory is gone: a lock we can take belongs to a dead writer.
      auto fd = open_regular(path, O_RDWR);
      if (!fd.ok()) continue;
      if (::flock(*fd, LOCK_EX | LOCK_NB) == 0 && remove_dir(path.substr(0, path.size() - 5))) ::unlink(path.c_str());
      ::close(*fd);
    } else if (kind == TmpKind::kStage) {
      // (Its lock may have been handled above, removing it already.)
      if (file_type(path + ".lock") == FileType::kMissing) remove_dir(path);  // its lock is gone, so its writer is too
    } else if (older_than_an_hour(path) || writer_is_gone(name)) {
      // lk-, tag-, model- and probe- files are renamed or removed within moments of their
      // creation: an old one, or one whose process no longer exists on this host, was left by a crash.
      if (unlink_regular(path)) ++removed;
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

// Removes least recently used entries (but `keep`) until the rest take at most `max_bytes`.
// Entries that hold something streamrt did not write cannot be evicted; they are skipped (and
// reported to `skipped` when given, else logged).
Status evict(const std::string& dir, uint64_t max_bytes, const CacheKey* keep, PruneReport* report, Skipped* skipped) {
  std::vector<Scanned> entries = scan(dir);
  uint64_t total = 0;
  for (const Scanned& s : entries) total += s.info.size;
  for (const Scanned& s : entries) {
    if (total <= max_bytes) break;
    if (keep && s.info.key == *keep) continue;
    Status st = remove_entry(dir, s.info.key);
    if (st.code() == StatusCode::kInvalidState) {
      if (skipped) skipped->add(st.message());
      else log_warning("engine cache: cannot evict " + s.info.key.hex() + ": " + st.message());
      continue;
    }
    SRT_RETURN_IF_ERROR(st);
    total -= s.info.size;
    log_info("engine cache: evicted " + s.info.key.hex() + " (" + std::to_string(s.info.size) + " bytes)");
    if (report) {
      ++report->evicted;
      report->bytes_freed += s.info.size;
    }
  }
  return ok_status();
}

}  // namespace

Result<CacheEntry> DiskEngineCache::load(const CacheKey& key) {
  auto e = read_entry(dir_, key);
  if (!e.ok()) {
    if (e.status().code() == StatusCode::kInvalidPlan) {
      // The caller (build_plan_cached) warns; here the entry only goes away.
      Status removed = remove(key);
      return invalid_plan(e.status().message() + (removed.ok() ? "; removed" : "; removing it failed: " + removed.message()));
    }
    return e.status();
  }
  // The entry may have been removed since it was read; then there is nothing to touch.
  if (read_only_.empty()) (void)touch(entry_dir(dir_, key) + "/" + kLastUseFile);
  return e;
}

Status DiskEngineCache::save(const CacheKey& key, const CacheEntry& entry) {
  SRT_RETURN_IF_ERROR(check_writable(dir_, read_only_));
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
  (void)remove_entry_dir(stage);  // gone after a successful rename; a partial one after a failure
  ::unlink(lock_path.c_str());
  ::close(fd);
  if (!st.ok()) return st.with_context("engine cache: saving " + key.hex());
  SRT_RETURN_IF_ERROR(testing::fault("evict"));
  return evict(dir_, max_bytes_, &key, nullptr, nullptr);
}

bool DiskEngineCache::contains(const CacheKey& key) {
  const std::string d = entry_dir(dir_, key);
  return file_type(d + "/" + kPlanFile) == FileType::kRegular && file_type(d + "/" + kMetaFile) == FileType::kRegular;
}

Status DiskEngineCache::remove(const CacheKey& key) {
  if (file_type(entry_dir(dir_, key)) == FileType::kMissing) return ok_status();
  SRT_RETURN_IF_ERROR(check_writable(dir_, read_only_));
  return remove_entry(dir_, key);
}

Result<std::unique_ptr<CacheLock>> DiskEngineCache::lock(const CacheKey& key) {
  if (!read_only_.empty()) return std::unique_ptr<CacheLock>();  // nothing will be stored: no one to wait for
  const std::string path = dir_ + "/locks/" + key.hex() + ".lock";
  for (;;) {
    SRT_ASSIGN_OR_RETURN(int fd, open_regular(path, O_RDWR | O_CREAT));
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

Result<std::vector<DiskCacheEntryInfo>> DiskEngineCache::list() const {
  if (file_type(dir_ + "/entries") != FileType::kDirectory || ::access((dir_ + "/entries").c_str(), R_OK) != 0)
    return errno_status("cannot read the engine cache", dir_);
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

namespace {

// Unlocked lock files in locks/ (prune and clear); other names are skipped.
size_t remove_stale_locks(const std::string& dir, Skipped& skipped) {
  size_t removed = 0;
  for (const std::string& name : list_dir(dir + "/locks")) {
    const std::string path = dir + "/locks/" + name;
    mode_t mode = 0;
    const FileType type = file_type(path, &mode);
    if (!is_hex64_named(name, ".lock") || type != FileType::kRegular) {
      if (type != FileType::kMissing)
        skipped.add("'" + path + "' is " + (type == FileType::kRegular ? "not a lock file streamrt made" : describe_mode(mode)) + "; left in place");
      continue;
    }
    if (remove_if_unlocked(path)) ++removed;
  }
  return removed;
}

void finish_report(const char* what, Skipped& skipped, PruneReport& rep) {
  std::sort(skipped.why.begin(), skipped.why.end());  // (an entry may be met twice: checked, then evicted)
  skipped.why.erase(std::unique(skipped.why.begin(), skipped.why.end()), skipped.why.end());
  rep.skipped = skipped.why.size();
  for (const std::string& why : skipped.why) log_warning(std::string("engine cache ") + what + ": " + why);
}

}  // namespace

Result<PruneReport> DiskEngineCache::prune() {
  SRT_RETURN_IF_ERROR(check_writable(dir_, read_only_));
  PruneReport rep;
  Skipped skipped;
  rep.orphans = clean_tmp(dir_, &skipped);
  for (const Scanned& s : scan(dir_, false, &skipped)) {
    auto e = read_entry(dir_, s.info.key);
    if (e.ok() || e.status().code() != StatusCode::kInvalidPlan) {
      if (e.status().code() == StatusCode::kInvalidState) skipped.add(e.status().message());
      continue;
    }
    log_warning(e.status().message() + "; removed it");
    Status removed = remove_entry(dir_, s.info.key);
    if (removed.code() == StatusCode::kInvalidState) skipped.add(removed.message());
    else SRT_RETURN_IF_ERROR(removed);
    ++rep.broken;
    rep.bytes_freed += s.info.size;
  }
  rep.orphans += remove_stale_locks(dir_, skipped);
  SRT_RETURN_IF_ERROR(evict(dir_, max_bytes_, nullptr, &rep, &skipped));
  finish_report("prune", skipped, rep);
  return rep;
}

Result<PruneReport> DiskEngineCache::clear() {
  SRT_RETURN_IF_ERROR(check_writable(dir_, read_only_));
  PruneReport rep;
  Skipped skipped;
  rep.orphans = clean_tmp(dir_, &skipped);
  for (const Scanned& s : scan(dir_, false, &skipped)) {
    Status removed = remove_entry(dir_, s.info.key);
    if (removed.code() == StatusCode::kInvalidState) {
      skipped.add(removed.message());
      continue;
    }
    SRT_RETURN_IF_ERROR(removed);
    ++rep.evicted;
    rep.bytes_freed += s.info.size;
  }
  for (const std::string& name : list_dir(dir_ + "/models")) {
    const std::string path = dir_ + "/models/" + name;
    if (!is_hex64_named(name, ".json") || !unlink_regular(path)) {
      mode_t mode = 0;
      if (file_type(path, &mode) != FileType::kMissing)
        skipped.add("'" + path + "' is " + (is_hex64_named(name, ".json") ? describe_mode(mode) : "not a record streamrt made") + "; left in place");
    }
  }
  rep.orphans += remove_stale_locks(dir_, skipped);
  finish_report("clear", skipped, rep);
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
  if (!bytes.ok()) {
    if (bytes.status().code() != StatusCode::kNotFound) log_warning("engine cache: " + bytes.status().message());
    return std::nullopt;
  }
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
  if (!read_only_.empty()) return;  // (the save already warned)
  const std::string target = record_path(dir_, model);
  mode_t mode = 0;
  const FileType type = file_type(target, &mode);
  if (type != FileType::kMissing && type != FileType::kRegular) {  // a rename would replace it
    log_warning("engine cache: '" + target + "' is " + describe_mode(mode) + ", not a record streamrt wrote; left in place");
    return;
  }
  nlohmann::json j;
  j["model"] = model;
  j["key"] = info.key.hex();
  j["components"] = info.components;
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string tmp = dir_ + "/tmp/model-" + unique_suffix();
  Status st = write_new_file(tmp, text.data(), text.size());
  if (st.ok() && ::rename(tmp.c_str(), target.c_str()) != 0) st = errno_status("cannot rename", tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    log_warning("engine cache: cannot record the key of '" + model + "': " + st.message());
  }
}

}  // namespace streamrt
