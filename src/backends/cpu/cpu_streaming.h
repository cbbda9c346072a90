// Weight streaming on the CPU device. The backing store is the plan file itself: streamed
// weights are used in place from the file mapping during the step that reads them and their
// pages are dropped from the process's resident set right after it (they stay in the kernel's
// page cache, or are read from disk again). The "arena" of streamed weights is thus the window
// of pages of the step that runs plus the next streamed step's, which a worker thread maps in
// while this one computes; resident weights keep their pages. A table that only Gathers read is
// never mapped in whole: outside the budget a run faults in just the rows it gathers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/engine_state.h"
#include "runtime/residency_planner.h"

namespace streamrt::cpu {

struct CpuEngineState {
  ResidencyPlan residency;
  // Per step: the streamed (non-resident) weights it reads.
  std::vector<std::vector<int32_t>> step_streamed;
  // Per step: the Gather tables outside the budget it reads in place (ResidencyPlan::read_in_place):
  // never mapped ahead, so a run brings in only the pages of the rows it gathers; dropped after.
  std::vector<std::vector<int32_t>> step_in_place;
  // Steps that read streamed weights, in order (for read-ahead).
  std::vector<size_t> streamed_steps;
  bool file_backed = false;
};

// The CPU's figures for the residency planner.
DeviceProfile cpu_profile();

// Plans residency for es.budget and stores a CpuEngineState in es.device_state.
Status apply_cpu_weight_budget(EngineState& es);
// The residency plan at `budget` (the step that runs and the one read ahead: 2 slots).
ResidencyPlan cpu_residency(const EngineState& es, uint64_t budget);

// One thread that runs a posted job (mapping a streamed step's pages) while its caller computes;
// started on first use, joined (after its job) on destruction. A thread per job would cost more
// than mapping a small weight from the page cache takes (42 us vs 12 us per MiB on a 2-core VM).
class MapAheadWorker {
 public:
  MapAheadWorker() = default;
  MapAheadWorker(const MapAheadWorker&) = delete;
  MapAheadWorker& operator=(const MapAheadWorker&) = delete;
  ~MapAheadWorker();
  // Runs `job` on the worker; the previous job's result must have been taken (wait()).
  void post(std::function<double()> job);
  // The posted job's result once it finished; nullopt when nothing is posted.
  std::optional<double> wait();

 private:
  void loop();
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<double()> job_;  // posted, not yet started
  bool posted_ = false, done_ = false, stop_ = false;
  double result_ = 0;
};

// Per-context streaming work around each step.
class CpuStreamer {
 public:
  explicit CpuStreamer(const EngineState& es);
  void begin_run();
  // Before step `s`: waits for its streamed weights to be mapped in (timed as a stall; the first
  // streamed step of a run maps them itself) and starts mapping the next streamed step's on a
  // worker thread, so that copy overlaps this step's compute.
  void before_step(size_t s);
  // After step `s`: drops its streamed weights' pages.
  void after_step(size_t s);
  void end_run();
  StreamingStats stats() const { return stats_; }

 private:
  void finish_pending();  // waits for the worker's mapping, if any (an aborted run may leave one)

  const EngineState& es_;
  const CpuEngineState* ces_ = nullptr;
  size_t next_ = 0;  // index into streamed_steps of the next streamed step
  // Maps `pending_step_`'s weights (SIZE_MAX: none posted); its result is the ms it took.
  MapAheadWorker worker_;
  size_t pending_step_ = SIZE_MAX;
  StreamingStats stats_;
  std::chrono::steady_clock::time_point run_start_;
};

}  // namespace streamrt::cpu
