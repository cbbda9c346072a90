#include "core/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace streamrt {
namespace {

LogLevel initial_level() {
  const char* env = std::getenv("STREAMRT_LOG");
  if (!env) return LogLevel::kWarning;
  if (!std::strcmp(env, "error")) return LogLevel::kError;
  if (!std::strcmp(env, "info")) return LogLevel::kInfo;
  if (!std::strcmp(env, "verbose")) return LogLevel::kVerbose;
  return LogLevel::kWarning;
}

std::atomic<int>& level_ref() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

}  // namespace

void set_log_level(LogLevel level) { level_ref() = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(level_ref().load()); }

void log_message(LogLevel level, const std::string& msg) {
  if (static_cast<int>(level) > level_ref().load()) return;
  static const char* names[] = {"error", "warning", "info", "verbose"};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "streamrt %s: %s\n", names[static_cast<int>(level)], msg.c_str());
}

}  // namespace streamrt
