#include "core/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace streamrt {
namespace {

Status errno_status(const std::string& what, const std::string& path, int err = errno) {
  return io_error(what + " '" + path + "': " + std::strerror(err));
}

file_io_testing::FaultHook& fault_hook() {
  static file_io_testing::FaultHook hook;
  return hook;
}

Status fault(const char* step) { return fault_hook() ? fault_hook()(step) : ok_status(); }

void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

// ("dir", "base") of a path; "." for a bare name.
std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// A decimal pid > 0; -1 otherwise.
long parse_pid(const std::string& s) {
  if (!all_digits(s) || s.size() > 9) return -1;
  const long v = std::stol(s);
  return v > 0 ? v : -1;
}

// The pid a temporary's name carries after `prefix`: "<pid>.<n>" (ours), or "<pid>" alone for
// the "<target>.tmp.<pid>" files older streamrt versions left; -1 when the name is neither.
long temp_pid(const std::string& name, const std::string& prefix, bool legacy) {
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string rest = name.substr(prefix.size());
  if (legacy) return parse_pid(rest);
  const size_t dot = rest.find('.');
  if (dot == std::string::npos || !all_digits(rest.substr(dot + 1))) return -1;
  return parse_pid(rest.substr(0, dot));
}

Status write_all(int fd, const void* data, size_t size, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    if (Status st = fault("write"); !st.ok()) return st.with_context("cannot write '" + path + "'");
    // Bounded chunks: Linux writes at most ~2 GiB per call anyway, and a fault hook sees each.
    const ssize_t w = ::write(fd, p, std::min<size_t>(size, size_t{1} << 26));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno_status("cannot write", path);
    if (w == 0) return io_error("cannot write '" + path + "': no progress");
    p += w;
    size -= static_cast<size_t>(w);
  }
  return ok_status();
}

// fsync of the folder, so that the rename survives a crash. Filesystems that cannot sync a
// folder (EINVAL) are not an error.
Status sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status("cannot open folder", dir);
  Status st = ::fsync(fd) == 0 || errno == EINVAL ? ok_status() : errno_status("cannot fsync folder", dir);
  ::close(fd);
  return st;
}

// Creates a fresh temporary beside `path`; its name in `*tmp`.
Result<int> create_temp(const std::string& path, std::string* tmp) {
  static std::atomic<unsigned> counter{0};
  const std::string prefix = temp_prefix_for(path) + std::to_string(::getpid()) + ".";
  for (int attempt = 0; attempt < 4; ++attempt) {
    *tmp = prefix + std::to_string(counter++);
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) return errno_status("cannot create temporary file", *tmp);
  }
  return io_error("cannot create a temporary file beside '" + path + "': names in use");
}

}  // namespace

const char* file_kind_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

// ---- reading -----------------------------------------------------------------------------

Result<InputFile> InputFile::open(const std::string& path, const Options& options, StatusCode too_large_code) {
  // Devices are refused before they are opened too: opening some has effects (a watchdog arms).
  // The fstat below still decides, on what was actually opened.
  struct stat pre {};
  const int pre_rc = options.follow_symlinks ? ::stat(path.c_str(), &pre) : ::lstat(path.c_str(), &pre);
  if (pre_rc == 0 && !S_ISREG(pre.st_mode))
    return io_error("'" + path + "' is " + file_kind_name(pre.st_mode) + ", not a regular file");
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (options.follow_symlinks ? 0 : O_NOFOLLOW);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    if (errno == ELOOP && !options.follow_symlinks) return io_error("'" + path + "' is a symbolic link");
    return errno_status("cannot open", path);
  }
  InputFile file(fd, 0, path);  // closes fd on every early return
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_status("cannot stat", path);
  if (!S_ISREG(st.st_mode))
    return io_error("'" + path + "' is " + file_kind_name(st.st_mode) + ", not a regular file");
  file.size_ = static_cast<uint64_t>(st.st_size);
  if (file.size_ > options.max_size)
    return Status(too_large_code, "'" + path + "' has " + std::to_string(file.size_) + " bytes, more than the " +
                                      std::to_string(options.max_size) + " allowed");
  // Regular files never block; clear the flag so reads behave as usual everywhere.
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) return errno_status("cannot set flags of", path);
  return file;
}

InputFile::InputFile(InputFile&& o) noexcept : fd_(o.fd_), size_(o.size_), path_(std::move(o.path_)) { o.fd_ = -1; }

InputFile& InputFile::operator=(InputFile&& o) noexcept {
  if (this != &o) {
    close_fd(fd_);
    fd_ = o.fd_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

InputFile::~InputFile() { close_fd(fd_); }

Status InputFile::read_at(void* dst, size_t n, uint64_t offset) const {
  auto* p = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, p + done, std::min<size_t>(n - done, size_t{1} << 30),
                              static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno_status("cannot read", path_);
    if (r == 0)
      return io_error("cannot read '" + path_ + "': it ends at byte " + std::to_string(offset + done) +
                      ", " + std::to_string(n - done) + " bytes short (changed while read?)");
    done += static_cast<size_t>(r);
  }
  return ok_status();
}

Result<std::string> InputFile::read_all() const {
  std::string bytes(static_cast<size_t>(size_), '\0');
  SRT_RETURN_IF_ERROR(read_at(bytes.data(), bytes.size(), 0));
  return bytes;
}

Result<std::string> read_whole_file(const std::string& path, uint64_t max_size) {
  SRT_ASSIGN_OR_RETURN(InputFile file, InputFile::open(path, max_size));
  return file.read_all();
}

// ---- writing -----------------------------------------------------------------------------

Status check_output_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? ok_status() : errno_status("cannot stat", path);
  if (S_ISREG(st.st_mode)) return ok_status();
  return io_error("refusing to write '" + path + "': it is " + file_kind_name(st.st_mode) +
                  ", not a regular file (streamrt only replaces regular files)");
}

std::string temp_prefix_for(const std::string& path) { return path + ".streamrt-tmp."; }

int remove_stale_temps(const std::string& path) {
  const auto [dir, base] = split_path(path);
  const std::string ours = base + ".streamrt-tmp.", legacy = base + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  int removed = 0;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    long pid = temp_pid(name, ours, false);
    if (pid < 0) pid = temp_pid(name, legacy, true);
    if (pid < 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    const std::string full = dir + "/" + name;
    struct stat st {};
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(full.c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

Status write_file_atomic(const std::string& path, const std::function<Status(const WriteSink&)>& produce) {
  if (path.empty() || path.back() == '/') return io_error("cannot write '" + path + "': not a file name");
  SRT_RETURN_IF_ERROR(check_output_path(path));
  remove_stale_temps(path);
  std::string tmp;
  SRT_ASSIGN_OR_RETURN(int fd, create_temp(path, &tmp));
  Status st = produce([fd, &tmp](const void* p, size_t n) { return write_all(fd, p, n, tmp); });
  if (st.ok()) st = fault("fsync").with_context("cannot fsync '" + tmp + "'");
  if (st.ok() && ::fsync(fd) != 0) st = errno_status("cannot fsync", tmp);
  if (::close(fd) != 0 && st.ok()) st = errno_status("cannot close", tmp);
  // Again, just before the rename: rename(2) would replace a FIFO or device made meanwhile.
  if (st.ok()) st = check_output_path(path);
  if (st.ok()) st = fault("rename").with_context("cannot rename '" + tmp + "' to '" + path + "'");
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = io_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return sync_dir(split_path(path).first);
}

Status write_file_atomic(const std::string& path, const void* data, size_t size) {
  return write_file_atomic(path, [&](const WriteSink& sink) { return sink(data, size); });
}

Status make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return io_error("cannot create directory '" + path + "': " + ec.message());
  if (!std::filesystem::is_directory(path, ec))
    return io_error("cannot create directory '" + path + "': it exists and is not a directory");
  return ok_status();
}

namespace file_io_testing {
void set_fault_hook(FaultHook hook) { fault_hook() = std::move(hook); }
}  // namespace file_io_testing

}  // namespace streamrt
