// Small POSIX file helpers for the disk cache: every call returns a Status naming the path,
// and writes go through the fault-injection hook (fault_injection.h).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "streamrt/status.h"

namespace streamrt::cache {

// kIoError "<what> '<path>': <strerror(errno)>".
Status errno_status(const std::string& what, const std::string& path);
// mkdir -p; OK when it exists as a directory.
Status make_dirs(const std::string& path);
// Creates `path` (it must not exist), writes `size` bytes in 64 KiB chunks, fsyncs, closes. The
// file is left behind on failure (callers write inside a staging directory they remove).
Status write_new_file(const std::string& path, const void* data, size_t size);
// The whole file, at most `max_bytes` (kInvalidPlan when larger); kNotFound when absent.
Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes);
// fsync() of a directory, so renames inside it survive a crash.
Status sync_dir(const std::string& path);
// Sets a file's modification time to now (the clock's full resolution, not the kernel's coarse
// timestamp clock, so that last-use order is exact). Creates the file when missing.
Status touch(const std::string& path);
// rm -rf; OK when absent. Tolerates another process removing the same tree.
void remove_tree(const std::string& path);
// Names in a directory (no "." / ".."); empty when it cannot be read.
std::vector<std::string> list_dir(const std::string& path);
// Allocated bytes of a file or of every file under a directory (du); 0 when absent.
uint64_t disk_usage(const std::string& path);
// Modification time in nanoseconds since the epoch; 0 when absent.
int64_t mtime_ns(const std::string& path);

}  // namespace streamrt::cache
