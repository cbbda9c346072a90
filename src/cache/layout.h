// What a DiskEngineCache directory holds, and what is streamrt's in it.
//
// The cache owns only what it wrote. A directory is a cache when it holds the marker file
// STREAMRT_CACHE (written when streamrt makes the cache); a non-empty directory without it is
// refused, unless everything in it is laid out as an engine cache of an earlier streamrt
// version (which is then adopted: the marker is added). Inside a cache, removal touches only
// names of streamrt's own patterns (below) and only regular files and real directories: a
// symlink, FIFO, socket or device, a directory where a file belongs, or any other name is left
// in place and reported, never followed or written through.
//
//   STREAMRT_CACHE, CACHEDIR.TAG
//   entries/<key>/{plan,meta.json,last_use}
//   locks/<key>.lock
//   models/<key-sized hash>.json
//   tmp/dead-<key>-<pid>-<n>/ and tmp/stage-<key>-<pid>-<n>/ (entry-shaped directories),
//   tmp/stage-<key>-<pid>-<n>.lock, tmp/{lk,tag,model,probe}-<pid>-<n>
#pragma once

#include <string>
#include <string_view>

#include "streamrt/status.h"

namespace streamrt::cache {

inline constexpr char kMarkerFile[] = "STREAMRT_CACHE";
inline constexpr char kPlanFile[] = "plan";
inline constexpr char kMetaFile[] = "meta.json";
inline constexpr char kLastUseFile[] = "last_use";

// "<pid>-<n>", unique within this host while the process lives.
std::string unique_suffix();

// 64 lowercase hex digits (a key, or a model record's hash).
bool is_hex64(std::string_view s);
// "<64 hex><suffix>" (locks/<key>.lock, models/<hash>.json).
bool is_hex64_named(std::string_view name, std::string_view suffix);

// What a name in tmp/ is.
enum class TmpKind {
  kForeign,    // not a name streamrt makes
  kDead,       // dead-<key>-<pid>-<n>: an entry being removed
  kStage,      // stage-<key>-<pid>-<n>: an entry being written
  kStageLock,  // stage-<key>-<pid>-<n>.lock: held by the writer of that stage
  kTemp,       // {lk,tag,model,probe}-<pid>-<n>: a file renamed (or removed) moments after it is made
};
TmpKind classify_tmp(std::string_view name);
// The <pid> of a kDead/kStage/kStageLock/kTemp name (0 for others).
long tmp_name_pid(std::string_view name);

// OK when `path` is absent, or a real directory (not a symlink) holding only regular files named
// plan, meta.json or last_use. kInvalidState naming the first other thing otherwise.
Status check_entry_dir(const std::string& path);
// Removes an entry-shaped directory: unlinks its plan, meta.json and last_use when they are
// regular files, then the directory. Anything else in it stays, and so does the directory
// (kInvalidState naming it). OK when absent; tolerates another process removing it meanwhile.
Status remove_entry_dir(const std::string& path);
// Unlinks `path` when it is a regular file (never a symlink's target). False otherwise.
bool unlink_regular(const std::string& path);

// Prepares `dir` for use as a cache (see above): creates it when missing, checks ownership,
// adds the marker and the layout. Returns why the cache cannot be written ("" when it can):
// a read-only or full file system, or a directory that cannot be created, leave the cache
// usable for reading only. kInvalidArgument for a directory that is not a streamrt cache,
// kIoError for a path that is not a directory.
Result<std::string> prepare_cache_dir(const std::string& dir);

}  // namespace streamrt::cache
