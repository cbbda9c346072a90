// One long build phase's reports through BuilderConfig::progress (nothing when it is unset).
#pragma once

#include <algorithm>

#include "streamrt/builder.h"

namespace streamrt::builder {

class PhaseProgress {
 public:
  PhaseProgress(const BuilderConfig& config, std::string_view phase, uint64_t total)
      : fn_(config.progress ? &config.progress : nullptr), phase_(phase), total_(total) {
    report();
  }
  PhaseProgress(const PhaseProgress&) = delete;
  PhaseProgress& operator=(const PhaseProgress&) = delete;
  // A phase that ends early (an error, a skipped rest) still closes its bar.
  ~PhaseProgress() {
    if (done_ < total_) {
      done_ = total_;
      report();
    }
  }
  void advance(uint64_t n = 1) {
    done_ = std::min(total_, done_ + n);
    report();
  }

 private:
  void report() const {
    if (fn_) (*fn_)(BuildProgress{phase_, done_, total_});
  }
  const std::function<void(const BuildProgress&)>* fn_;
  std::string_view phase_;
  uint64_t total_, done_ = 0;
};

}  // namespace streamrt::builder
