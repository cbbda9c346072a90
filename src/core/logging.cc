#include "core/logging.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace streamrt {
namespace {

std::atomic<int>& level_ref() {
  static std::atomic<int> level{static_cast<int>(LogLevel::kWarning)};
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
