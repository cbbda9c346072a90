// Small POSIX file helpers for the disk cache: every call returns a Status naming the path,
// and writes go through the fault-injection hook (fault_injection.h). None of them follows a
// symlink at the path's last component, or opens a FIFO or device: the cache reads and writes
// only regular files and directories it made (see layout.h).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "streamrt/status.h"

namespace streamrt::cache {

// kIoError "<what> '<path>': <strerror(errno)>".
Status errno_status(const std::string& what, const std::string& path);
// mkdir -p; OK when it exists as a directory. `error` (optional) gets the errno of a failure
// (EROFS for an injected "mkdir" fault).
Status make_dirs(const std::string& path, int* error = nullptr);
// Creates `path` (it must not exist), writes `size` bytes in 64 KiB chunks, fsyncs, closes. The
// file is left behind on failure (callers write inside a staging directory they remove).
Status write_new_file(const std::string& path, const void* data, size_t size);

// What lstat() says `path` is (kOther: a symlink, FIFO, socket or device; or lstat failed).
enum class FileType { kMissing, kRegular, kDirectory, kOther };
FileType file_type(const std::string& path, mode_t* mode = nullptr);
// "a symbolic link", "a FIFO", "a directory", ...
std::string describe_mode(mode_t mode);
// Opens a regular file (O_NOFOLLOW, and O_NONBLOCK until fstat() has shown it is regular, so
// that a FIFO cannot block the open). kNotFound when absent; kIoError naming what it is else.
Result<int> open_regular(const std::string& path, int flags);
// The whole regular file, at most `max_bytes` (kInvalidPlan when larger); kNotFound when absent.
Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes);
// fsync() of a directory, so renames inside it survive a crash.
Status sync_dir(const std::string& path);
// Sets a regular file's modification time to now (the clock's full resolution, not the kernel's
// coarse timestamp clock, so that last-use order is exact). Creates the file when missing.
Status touch(const std::string& path);
// Names in a directory (no "." / ".."); empty when it cannot be read. Unless `follow`, a symlink
// at `path` is not listed through.
std::vector<std::string> list_dir(const std::string& path, bool follow = false);
// Allocated bytes of a file or of every file under a directory (du, not following symlinks);
// 0 when absent.
uint64_t disk_usage(const std::string& path);
// Modification time (of a symlink itself, not its target) in nanoseconds since the epoch; 0
// when absent.
int64_t mtime_ns(const std::string& path);

}  // namespace streamrt::cache
