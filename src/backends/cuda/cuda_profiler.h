// Per-step GPU time by op type (STREAMRT_PROFILE=1): CUDA events around every device step of
// every eager run, summed per op type and printed as a table when the context goes away — the
// `trtexec --dumpProfile` of streamrt. Off by default; it never synchronizes the stream.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

namespace streamrt::cuda {

class StepProfiler {
 public:
  StepProfiler();  // enabled by the environment
  ~StepProfiler();
  bool enabled() const { return enabled_; }
  void begin(size_t step, cudaStream_t stream);
  void end(size_t step, const std::string& op_type, cudaStream_t stream);
  // Adds the last run's times (its stream must have completed).
  void collect();
  void set_name(const std::string& name) { name_ = name; }

 private:
  struct Pending {
    cudaEvent_t a, b;
    std::string op;
  };
  bool enabled_ = false;
  std::string name_;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> pool_;
  std::map<std::string, std::pair<double, long>> total_;  // op -> (ms, count)
  int runs_ = 0;
  cudaEvent_t open_ = nullptr;
};

}  // namespace streamrt::cuda
