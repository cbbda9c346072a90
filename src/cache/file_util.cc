#include "cache/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "cache/fault_injection.h"
#include "core/file_io.h"

namespace streamrt::cache {

Status errno_status(const std::string& what, const std::string& path) {
  return io_error(what + " '" + path + "': " + std::strerror(errno));
}

Status make_dirs(const std::string& path, int* error) {
  std::error_code ec;
  if (error) *error = 0;
  if (!std::filesystem::is_directory(path, ec)) {
    if (Status f = testing::fault("mkdir"); !f.ok()) {
      if (error) *error = EROFS;
      return f.with_context("cannot create directory '" + path + "'");
    }
  }
  std::filesystem::create_directories(path, ec);
  if (ec) {
    if (error) *error = ec.value();
    return io_error("cannot create directory '" + path + "': " + ec.message());
  }
  if (!std::filesystem::is_directory(path, ec)) {
    if (error) *error = ENOTDIR;
    return io_error("'" + path + "' is not a directory");
  }
  return ok_status();
}

Status write_new_file(const std::string& path, const void* data, size_t size) {
  // O_EXCL also refuses a symlink (even a dangling one) at `path`: nothing is written through it.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("cannot create", path);
  const auto* p = static_cast<const uint8_t*>(data);
  constexpr size_t kChunk = 64 * 1024;
  Status st;
  for (size_t done = 0; done < size && st.ok();) {
    st = testing::fault("write");
    if (!st.ok()) {
      st = st.with_context("cannot write '" + path + "'");
      break;
    }
    ssize_t w = ::write(fd, p + done, std::min(kChunk, size - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) st = errno_status("cannot write", path);
    else done += static_cast<size_t>(w);
  }
  if (st.ok()) st = testing::fault("fsync");
  if (st.ok() && ::fsync(fd) != 0) st = errno_status("cannot fsync", path);
  if (::close(fd) != 0 && st.ok()) st = errno_status("cannot close", path);
  return st;
}

std::string describe_mode(mode_t mode) { return file_kind_name(mode); }

FileType file_type(const std::string& path, mode_t* mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? FileType::kMissing : FileType::kOther;
  if (mode) *mode = st.st_mode;
  if (S_ISREG(st.st_mode)) return FileType::kRegular;
  if (S_ISDIR(st.st_mode)) return FileType::kDirectory;
  return FileType::kOther;
}

Result<int> open_regular(const std::string& path, int flags) {
  mode_t mode = 0;
  if (file_type(path, &mode) == FileType::kOther && mode != 0)  // (not even opened: a device may react)
    return io_error("'" + path + "' is " + describe_mode(mode) + ", not a file streamrt wrote; skipped");
  // O_NONBLOCK: opening a FIFO would otherwise wait for its other end (forever).
  int fd = ::open(path.c_str(), flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == ENOENT) return not_found("no file '" + path + "'");
    if (errno == ELOOP) return io_error("'" + path + "' is a symbolic link, not a file streamrt wrote; not followed");
    if (errno == ENXIO) return io_error("'" + path + "' is a FIFO or device, not a file streamrt wrote; skipped");
    return errno_status("cannot open", path);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    Status s = io_error("'" + path + "' is " + describe_mode(st.st_mode) + ", not a file streamrt wrote; skipped");
    ::close(fd);
    return s;
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    Status s = errno_status("cannot clear O_NONBLOCK of", path);
    ::close(fd);
    return s;
  }
  return fd;
}

Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes) {
  if (file_type(path, nullptr) == FileType::kMissing) return not_found("no file '" + path + "'");
  // Never through a link: a cache holds only files it wrote itself.
  SRT_ASSIGN_OR_RETURN(InputFile file, InputFile::open(path, {max_bytes, false}, StatusCode::kInvalidPlan));
  std::vector<uint8_t> out(static_cast<size_t>(file.size()));
  SRT_RETURN_IF_ERROR(file.read_at(out.data(), out.size(), 0));
  return out;
}

Status sync_dir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status("cannot open directory", path);
  int rc = ::fsync(fd);
  Status st = rc == 0 ? ok_status() : errno_status("cannot fsync directory", path);
  ::close(fd);
  return st;
}

Status touch(const std::string& path) {
  struct timespec now[2];
  ::clock_gettime(CLOCK_REALTIME, &now[0]);
  now[1] = now[0];
  mode_t mode = 0;
  switch (file_type(path, &mode)) {
    case FileType::kRegular:  // (never through a symlink, and never a FIFO's or a device's times)
      if (::utimensat(AT_FDCWD, path.c_str(), now, AT_SYMLINK_NOFOLLOW) == 0) return ok_status();
      if (errno != ENOENT) return errno_status("cannot set the time of", path);
      break;
    case FileType::kMissing:
      break;
    default:
      return io_error("'" + path + "' is " + describe_mode(mode) + ", not a file streamrt wrote; left alone");
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("cannot create", path);
  int rc = ::futimens(fd, now);
  ::close(fd);
  return rc == 0 ? ok_status() : errno_status("cannot set the time of", path);
}

std::vector<std::string> list_dir(const std::string& path, bool follow) {
  std::vector<std::string> out;
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
  if (fd < 0) return out;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return out;
  }
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(std::move(name));
  }
  ::closedir(d);
  return out;
}

uint64_t disk_usage(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  uint64_t total = static_cast<uint64_t>(st.st_blocks) * 512;
  if (S_ISDIR(st.st_mode))
    for (const std::string& name : list_dir(path)) total += disk_usage(path + "/" + name);
  return total;
}

int64_t mtime_ns(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace streamrt::cache
