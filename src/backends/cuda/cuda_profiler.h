// Per-step GPU time by op type (RuntimeOptions::profile): CUDA events around every device step
// of every eager run, summed per op type and printed as a table when the context goes away — the
// `trtexec --dumpProfile` of streamrt. Off by default; it never synchronizes the stream.
// RuntimeOptions::step_times_path also keeps each step's mean time, which the context appends to
// that file as JSON lines when it goes away (with the residency planner's estimate next to it: the
// data for checking the planner's device model against the GPU). set_step_timing() (the API's
// ExecutionContext::set_step_timing) keeps the last run's time per step.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

namespace streamrt::cuda {

class StepProfiler {
 public:
  // `table`: RuntimeOptions::profile; `step_times_path`: RuntimeOptions::step_times_path.
  StepProfiler(bool table, std::string step_times_path) : table_(table), step_times_path_(std::move(step_times_path)) {}
  ~StepProfiler();
  bool enabled() const { return table_ || timing_ || !step_times_path_.empty(); }
  void set_step_timing(bool enable) { timing_ = enable; }
  // ms per step index of the last collected run (0 for steps not timed); empty before one.
  const std::vector<double>& last_run() const { return last_; }
  void begin(size_t step, cudaStream_t stream);
  void end(size_t step, const std::string& op_type, cudaStream_t stream);
  // Adds the last run's times (its stream must have completed).
  void collect();
  void set_name(const std::string& name) { name_ = name; }
  // RuntimeOptions::step_times_path ("" when off) and the mean ms per step index over the counted
  // runs (0 for steps never timed).
  const std::string& step_times_path() const { return step_times_path_; }
  std::vector<double> step_means() const;

 private:
  struct Pending {
    cudaEvent_t a, b;
    std::string op;
    size_t step;
  };
  bool table_ = false;   // RuntimeOptions::profile
  bool timing_ = false;  // set_step_timing
  std::vector<double> last_;
  std::string name_;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> pool_;
  std::map<std::string, std::pair<double, long>> total_;  // op -> (ms, count)
  std::string step_times_path_;
  std::vector<std::pair<double, long>> per_step_;  // step -> (ms, count)
  size_t open_step_ = 0;
  int runs_ = 0;
  bool seen_first_ = false;
  cudaEvent_t open_ = nullptr;
};

}  // namespace streamrt::cuda
