// Minimal leveled logging to stderr: warning and above until set_log_level() (the CLI sets it
// from --log-level or STREAMRT_LOG; the library reads no environment).
#pragma once

#include <string>

namespace streamrt {

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kVerbose = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, const std::string& msg);

inline void log_error(const std::string& m) { log_message(LogLevel::kError, m); }
inline void log_warning(const std::string& m) { log_message(LogLevel::kWarning, m); }
inline void log_info(const std::string& m) { log_message(LogLevel::kInfo, m); }
inline void log_verbose(const std::string& m) { log_message(LogLevel::kVerbose, m); }

}  // namespace streamrt
