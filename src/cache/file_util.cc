#include "cache/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "cache/fault_injection.h"

namespace streamrt::cache {

Status errno_status(const std::string& what, const std::string& path) {
  return io_error(what + " '" + path + "': " + std::strerror(errno));
}

Status make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return io_error("cannot create directory '" + path + "': " + ec.message());
  if (!std::filesystem::is_directory(path, ec)) return io_error("'" + path + "' is not a directory");
  return ok_status();
}

Status write_new_file(const std::string& path, const void* data, size_t size) {
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

Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? not_found("no file '" + path + "'") : errno_status("cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("'" + path + "' is not a readable regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return invalid_plan("'" + path + "' has " + std::to_string(st.st_size) + " bytes, more than the " +
                        std::to_string(max_bytes) + " allowed");
  }
  std::vector<uint8_t> out(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t r = ::read(fd, out.data() + done, out.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      Status s = errno_status("cannot read", path);
      ::close(fd);
      return s;
    }
    if (r == 0) break;  // shrank meanwhile: the size check below reports it
    done += static_cast<size_t>(r);
  }
  ::close(fd);
  if (done != out.size()) return invalid_plan("'" + path + "' changed size while read");
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
  if (::utimensat(AT_FDCWD, path.c_str(), now, 0) == 0) return ok_status();
  if (errno != ENOENT) return errno_status("cannot set the time of", path);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("cannot create", path);
  int rc = ::futimens(fd, now);
  ::close(fd);
  return rc == 0 ? ok_status() : errno_status("cannot set the time of", path);
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  // Another process may delete parts of the same tree at once; retry until it is gone.
  for (int attempt = 0; attempt < 4 && std::filesystem::symlink_status(path, ec).type() !=
                                           std::filesystem::file_type::not_found; ++attempt)
    std::filesystem::remove_all(path, ec);
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) return out;
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
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace streamrt::cache
