// The cache directory's ownership rules (see layout.h and docs/engine_cache.md).
#include "cache/layout.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "cache/fault_injection.h"
#include "cache/file_util.h"

namespace streamrt::cache {
namespace {

// A marker cut short (its writer died, or the disk filled) still reads as a prefix of this.
constexpr std::string_view kMarkerText =
    "streamrt engine cache\n"
    "# This directory belongs to streamrt's engine cache; streamrt removes only files it wrote here.\n";
constexpr std::string_view kTagText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by streamrt (engine cache).\n";
constexpr const char* kSubdirs[] = {"entries", "locks", "tmp", "models"};

bool is_digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "<pid>-<n>" (unique_suffix()).
bool is_suffix(std::string_view s) {
  const size_t dash = s.find('-');
  return dash != std::string_view::npos && is_digits(s.substr(0, dash)) && is_digits(s.substr(dash + 1));
}

bool is_entry_file(std::string_view name) { return name == kPlanFile || name == kMetaFile || name == kLastUseFile; }

// Why `path` (of lstat mode `mode`) is not streamrt's.
std::string not_ours(const std::string& path, mode_t mode, bool name_is_ours) {
  if (name_is_ours) return "'" + path + "' is " + describe_mode(mode) + ", not what streamrt writes there";
  return "'" + path + "' is not a name streamrt uses";
}

// Errors that mean "this cache cannot be written", not "this is no cache".
bool unwritable(int err) { return err == EACCES || err == EPERM || err == EROFS || err == ENOSPC || err == EDQUOT; }

// OK: streamrt's marker is there. kNotFound: no marker. kInvalidArgument: something else has its name.
Status check_marker(const std::string& dir) {
  const std::string path = dir + "/" + kMarkerFile;
  auto bytes = read_file(path, 4096);
  if (bytes.status().code() == StatusCode::kNotFound) return bytes.status();
  if (bytes.ok()) {
    const std::string_view got(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    const size_t n = std::min(got.size(), kMarkerText.size());
    if (got.substr(0, n) == kMarkerText.substr(0, n)) return ok_status();
  }
  return invalid_argument("'" + path + "' is not streamrt's cache marker" +
                          (bytes.ok() ? std::string() : " (" + bytes.status().message() + ")") +
                          "; refusing to use '" + dir + "' as an engine cache");
}

// "" when `child` (a name inside the layout directory `sub`) is one an engine cache has there.
std::string foreign_in(const std::string& sub_path, const std::string& sub, const std::string& child) {
  const std::string path = sub_path + "/" + child;
  mode_t mode = 0;
  const FileType type = file_type(path, &mode);
  if (type == FileType::kMissing) return "";  // removed meanwhile
  bool name_ok = false, dir_expected = false;
  if (sub == "entries") name_ok = dir_expected = is_hex64(child);
  else if (sub == "locks") name_ok = is_hex64_named(child, ".lock");
  else if (sub == "models") name_ok = is_hex64_named(child, ".json");
  else {
    const TmpKind kind = classify_tmp(child);
    name_ok = kind != TmpKind::kForeign;
    dir_expected = kind == TmpKind::kDead || kind == TmpKind::kStage;
  }
  if (!name_ok || type != (dir_expected ? FileType::kDirectory : FileType::kRegular)) return not_ours(path, mode, name_ok);
  if (dir_expected) {
    Status st = check_entry_dir(path);
    if (!st.ok()) return st.message();
  }
  return "";
}

// "" when everything in `dir` is laid out as an engine cache of an earlier streamrt (no marker
// yet, but streamrt's CACHEDIR.TAG); else the first thing that is not.
std::string foreign_in_layout(const std::string& dir, const std::vector<std::string>& names) {
  bool tagged = false;
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    mode_t mode = 0;
    const FileType type = file_type(path, &mode);
    if (name == "CACHEDIR.TAG") {
      auto tag = read_file(path, 4096);
      tagged = tag.ok() && std::string_view(reinterpret_cast<const char*>(tag->data()), tag->size()) == kTagText;
      if (!tagged) return "'" + path + "' is not streamrt's cache tag";
      continue;
    }
    bool sub = false;
    for (const char* s : kSubdirs) sub = sub || name == s;
    if (!sub || type != FileType::kDirectory) return not_ours(path, mode, sub);
    for (const std::string& child : list_dir(path)) {
      std::string why = foreign_in(path, name, child);
      if (!why.empty()) return why;
    }
  }
  return tagged ? "" : "there is no CACHEDIR.TAG of streamrt's";
}

// Writes the marker; "" when it is there now, else why not.
std::string write_marker(const std::string& dir) {
  const std::string path = dir + "/" + kMarkerFile;
  Status st = testing::fault("marker");
  if (st.ok()) st = write_new_file(path, kMarkerText.data(), kMarkerText.size());
  if (st.ok()) return "";
  // Another process that opened the cache at the same moment may have written it.
  auto bytes = read_file(path, 4096);
  if (bytes.ok() && bytes->size() == kMarkerText.size() && check_marker(dir).ok()) return "";
  return st.message();
}

void write_tag(const std::string& dir) {
  const std::string tag = dir + "/CACHEDIR.TAG";
  if (file_type(tag) != FileType::kMissing) return;
  const std::string tmp = dir + "/tmp/tag-" + unique_suffix();
  if (write_new_file(tmp, kTagText.data(), kTagText.size()).ok()) ::rename(tmp.c_str(), tag.c_str());
  ::unlink(tmp.c_str());
}

// "" when a file can be made in tmp/, else why not. A full disk does not count: space may come
// back, and a save then says why it failed.
std::string probe_writable(const std::string& dir) {
  if (Status f = testing::fault("probe"); !f.ok()) return f.with_context("cannot write to '" + dir + "'").message();
  const std::string path = dir + "/tmp/probe-" + unique_suffix();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno == ENOSPC || errno == EDQUOT ? "" : errno_status("cannot write to", dir + "/tmp").message();
  ::close(fd);
  ::unlink(path.c_str());
  return "";
}

}  // namespace

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_hex64_named(std::string_view name, std::string_view suffix) {
  return name.size() == 64 + suffix.size() && is_hex64(name.substr(0, 64)) && name.substr(64) == suffix;
}

TmpKind classify_tmp(std::string_view name) {
  for (const char* p : {"lk-", "tag-", "model-", "probe-"}) {
    const std::string_view prefix(p);
    if (name.substr(0, prefix.size()) == prefix) return is_suffix(name.substr(prefix.size())) ? TmpKind::kTemp : TmpKind::kForeign;
  }
  const bool dead = name.substr(0, 5) == "dead-", stage = name.substr(0, 6) == "stage-";
  if (!dead && !stage) return TmpKind::kForeign;
  std::string_view rest = name.substr(dead ? 5 : 6);
  const bool lock = stage && rest.size() > 5 && rest.substr(rest.size() - 5) == ".lock";
  if (lock) rest.remove_suffix(5);
  if (rest.size() < 66 || !is_hex64(rest.substr(0, 64)) || rest[64] != '-' || !is_suffix(rest.substr(65)))
    return TmpKind::kForeign;
  return dead ? TmpKind::kDead : lock ? TmpKind::kStageLock : TmpKind::kStage;
}

long tmp_name_pid(std::string_view name) {
  if (classify_tmp(name) == TmpKind::kForeign) return 0;
  const size_t dash = name.find('-');
  std::string_view rest = name.substr(dash + 1);
  if (name[0] == 'd' || name[0] == 's') rest = rest.substr(65);  // past "<key>-"
  long pid = 0;
  for (char c : rest.substr(0, rest.find('-'))) pid = pid * 10 + (c - '0');
  return pid;
}

Status check_entry_dir(const std::string& path) {
  mode_t mode = 0;
  const FileType type = file_type(path, &mode);
  if (type == FileType::kMissing) return ok_status();
  if (type != FileType::kDirectory) return invalid_state(not_ours(path, mode, true) + "; left in place");
  for (const std::string& name : list_dir(path)) {
    const std::string p = path + "/" + name;
    mode_t m = 0;
    const FileType t = file_type(p, &m);
    if (t != FileType::kMissing && (!is_entry_file(name) || t != FileType::kRegular))
      return invalid_state(not_ours(p, m, is_entry_file(name)) + "; its entry is left in place");
  }
  return ok_status();
}

Status remove_entry_dir(const std::string& path) {
  mode_t mode = 0;
  const FileType type = file_type(path, &mode);
  if (type == FileType::kMissing) return ok_status();
  if (type != FileType::kDirectory) return invalid_state(not_ours(path, mode, true) + "; left in place");
  std::string foreign;
  for (const std::string& name : list_dir(path)) {
    const std::string p = path + "/" + name;
    mode_t m = 0;
    const FileType t = file_type(p, &m);
    if (is_entry_file(name) && t == FileType::kRegular) {
      if (::unlink(p.c_str()) != 0 && errno != ENOENT) return errno_status("cannot remove", p);
    } else if (t != FileType::kMissing && foreign.empty()) {
      foreign = not_ours(p, m, is_entry_file(name));
    }
  }
  if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return ok_status();
  if (!foreign.empty()) return invalid_state(foreign + "; '" + path + "' is left in place");
  return errno_status("cannot remove directory", path);
}

bool unlink_regular(const std::string& path) {
  return file_type(path) == FileType::kRegular && ::unlink(path.c_str()) == 0;
}

Result<std::string> prepare_cache_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      if (unwritable(errno)) return errno_status("cannot use the engine cache", dir).message();
      return errno_status("cannot use the engine cache", dir);
    }
    int err = 0;
    Status made = make_dirs(dir, &err);
    if (!made.ok()) {
      if (unwritable(err)) return made.message();  // a cache that stays empty
      return made;
    }
  } else if (!S_ISDIR(st.st_mode)) {
    return io_error("cannot create directory '" + dir + "/entries': '" + dir + "' exists and is not a directory");
  }
  std::string read_only;
  Status marker = check_marker(dir);
  if (marker.code() == StatusCode::kNotFound) {
    const std::vector<std::string> names = list_dir(dir, /*follow=*/true);
    if (!names.empty()) {
      const std::string why = foreign_in_layout(dir, names);
      if (!why.empty())
        return invalid_argument("'" + dir + "' is not a streamrt engine cache: it is not empty, has no " + kMarkerFile +
                                " marker, and " + why + " (use an empty or new directory for the cache)");
    }
    read_only = write_marker(dir);  // an empty directory, or an earlier streamrt's cache: adopted
    if (!read_only.empty() && names.empty()) return read_only;  // nothing of a cache may be made there
  } else if (!marker.ok()) {
    return marker;
  }
  for (const char* sub : kSubdirs) {
    const std::string path = dir + "/" + sub;
    mode_t mode = 0;
    const FileType type = file_type(path, &mode);
    if (type == FileType::kDirectory) continue;
    if (type != FileType::kMissing)
      return invalid_argument(not_ours(path, mode, true) + "; refusing to use '" + dir + "' as an engine cache");
    if (!read_only.empty()) continue;
    int err = 0;
    Status made = make_dirs(path, &err);
    if (made.ok()) continue;
    if (!unwritable(err)) return made;
    read_only = made.message();
  }
  if (read_only.empty()) {
    write_tag(dir);
    read_only = probe_writable(dir);
  }
  return read_only;
}

}  // namespace streamrt::cache
