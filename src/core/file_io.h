// Opening and writing user-named files safely (POSIX). Every file streamrt reads or writes on a
// user's behalf (models, external data, plans, programs, .npy / .pb inputs and outputs) goes
// through here, so that:
//  - reads never block or run away: the file is opened O_NONBLOCK (a FIFO or a device cannot
//    stall the open), must be a regular file, and its size (from fstat) is checked against a
//    limit before anything is read or mapped, so /dev/zero or a FIFO is refused at once;
//  - writes never clobber what is not a regular file: a target that exists as a directory,
//    FIFO, device, socket or symbolic link is refused; the bytes go to a temporary file in the
//    same folder (<target>.streamrt-tmp.<pid>.<n>), every write / fsync / close is checked (a
//    full disk is reported), and the temporary is renamed over the target and the folder
//    fsynced; on any failure the temporary is removed. Temporaries of the same target left by
//    processes that no longer exist (killed mid-write) are removed before a write.
// Errors are kIoError naming the path. Nothing here is specific to one file format, so the
// engine cache can adopt these helpers too.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "streamrt/status.h"

namespace streamrt {

// "a directory", "a FIFO", "a character device", "a block device", "a socket",
// "a symbolic link", "a regular file" (or "a special file").
const char* file_kind_name(mode_t mode);

// A regular file open for reading (RAII: closed on destruction). Movable, not copyable.
class InputFile {
 public:
  struct Options {
    uint64_t max_size = UINT64_MAX;  // larger files are refused before any byte is read
    bool follow_symlinks = true;     // false: O_NOFOLLOW (the last component must not be a link)
  };
  // O_RDONLY | O_NONBLOCK | O_CLOEXEC, fstat, regular-file and size checks, then O_NONBLOCK
  // cleared. kIoError naming the path (and what it is when not a regular file); over
  // max_size: `too_large_code` naming the size and the limit.
  static Result<InputFile> open(const std::string& path, const Options& options,
                                StatusCode too_large_code = StatusCode::kInvalidArgument);
  static Result<InputFile> open(const std::string& path, uint64_t max_size) {
    return open(path, Options{max_size, true});
  }

  InputFile(InputFile&& o) noexcept;
  InputFile& operator=(InputFile&& o) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Exactly `n` bytes at `offset` (pread; EINTR retried, short reads continued). A file that
  // ends early (shrank since it was opened) is kIoError.
  Status read_at(void* dst, size_t n, uint64_t offset) const;
  // The whole file (its size when opened).
  Result<std::string> read_all() const;

 private:
  InputFile(int fd, uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

// Reads a whole regular file of at most `max_size` bytes.
Result<std::string> read_whole_file(const std::string& path, uint64_t max_size);

// Appends bytes to the file being written.
using WriteSink = std::function<Status(const void* data, size_t size)>;

// Writes `path` atomically (see the top of this file): `produce` is called once with a sink
// that appends to the temporary file; its failure, or any I/O failure, leaves the target
// untouched and no temporary behind. Refuses a target that exists and is not a regular file.
Status write_file_atomic(const std::string& path, const std::function<Status(const WriteSink&)>& produce);
Status write_file_atomic(const std::string& path, const void* data, size_t size);

// OK when `path` is absent or a regular file: what write_file_atomic() checks first. Commands
// call it before long work (a build) so that a bad output fails at once.
Status check_output_path(const std::string& path);

// The temporary name prefix of `path`'s writes: "<path>.streamrt-tmp.".
std::string temp_prefix_for(const std::string& path);
// Removes "<path>.streamrt-tmp.<pid>.<n>" files whose process no longer exists (kill(pid, 0)
// fails with ESRCH); files of live processes are kept. Returns how many were removed.
int remove_stale_temps(const std::string& path);

// mkdir -p; OK when `path` exists as a directory (or a link to one). kIoError naming the path
// when it cannot be created (a part of it is a file, no permission).
Status make_directories(const std::string& path);

namespace file_io_testing {
// Called before each write(2), fsync(2) of a file and rename(2) with "write", "fsync",
// "rename"; a non-OK result fails that step as the system call would. Null removes it.
// Not thread-safe: set it in tests before writing.
using FaultHook = std::function<Status(const std::string& step)>;
void set_fault_hook(FaultHook hook);
}  // namespace file_io_testing

}  // namespace streamrt
