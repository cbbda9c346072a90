// Helpers for the cache ownership tests: a byte-for-byte snapshot of a directory tree (without
// following symlinks), a forked child guarded by alarm() against hangs, and a pid that names no
// process.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace streamrt::testing {

// Every path under `root` (relative) -> its type, bytes or symlink target, and mtime: any file
// or directory created, removed, written or touched under `root` changes it.
inline std::map<std::string, std::string> snapshot_tree(const std::string& root) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out;
  std::error_code ec;
  auto describe = [&](const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return std::string("gone");
    std::string d = std::to_string(st.st_mode) + " mtime " + std::to_string(st.st_mtim.tv_sec) + "." +
                    std::to_string(st.st_mtim.tv_nsec) + " ";
    if (S_ISLNK(st.st_mode)) return d + "-> " + fs::read_symlink(p, ec).string();
    if (S_ISREG(st.st_mode)) {
      std::ifstream f(p, std::ios::binary);
      std::ostringstream s;
      s << f.rdbuf();
      return d + s.str();
    }
    return d;
  };
  out["."] = describe(root);
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    out[fs::relative(it->path(), root).string()] = describe(it->path());
  return out;
}

// Runs `child` in a forked process that SIGALRM kills after `seconds`; returns its exit code,
// or -signal when it was killed (-SIGALRM: it hung).
template <typename F>
int run_guarded(F child, unsigned seconds = 60) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(seconds);
    ::_exit(child());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// A pid that names no process now (a reaped child's).
inline pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace streamrt::testing
