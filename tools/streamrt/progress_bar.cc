#include "progress_bar.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

namespace streamrt::cli {

std::string progress_line(const BuildProgress& p, int width) {
  const double frac = p.total ? static_cast<double>(p.done) / static_cast<double>(p.total) : 1.0;
  const int filled = static_cast<int>(frac * width + 0.5);
  std::string line = "  " + std::string(p.phase) + " [";
  line.append(static_cast<size_t>(filled), '#');
  line.append(static_cast<size_t>(width - filled), '-');
  char pct[16];
  std::snprintf(pct, sizeof pct, "] %3d%%", static_cast<int>(frac * 100 + 0.5));
  return line + pct;
}

std::function<void(const BuildProgress&)> make_progress_bar(const std::string& mode) {
  if (mode == "off" || (mode == "auto" && !::isatty(STDERR_FILENO))) return {};
  struct State {
    std::chrono::steady_clock::time_point last{};
    std::string phase;
  };
  auto state = std::make_shared<State>();
  return [state](const BuildProgress& p) {
    // Redraw at most ten times a second, but always a phase's first and last report.
    const auto now = std::chrono::steady_clock::now();
    const bool edge = p.done == 0 || p.done >= p.total || state->phase != p.phase;
    if (!edge && now - state->last < std::chrono::milliseconds(100)) return;
    state->last = now, state->phase = std::string(p.phase);
    std::fprintf(stderr, "\r%s", progress_line(p, 30).c_str());
    if (p.done >= p.total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

}  // namespace streamrt::cli
