#include "backends/cpu/cpu_streaming.h"

#include <sys/mman.h>
#include <unistd.h>

#include <system_error>

#include "core/host_memory.h"
#include "core/logging.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace streamrt::cpu {
namespace {

const CpuEngineState* engine_streaming(const EngineState& es) {
  return static_cast<const CpuEngineState*>(es.device_state.get());
}

// Maps the pages of [p, p + n) now (a read from the page cache or the file).
void populate(const void* p, size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto lo = reinterpret_cast<uintptr_t>(p) / page * page;
  auto hi = reinterpret_cast<uintptr_t>(p) + n;
  if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_READ) == 0) return;
  volatile const uint8_t* b = static_cast<const uint8_t*>(p);  // older kernels: touch each page
  uint8_t sink = 0;
  for (size_t off = 0; off < n; off += page) sink ^= b[off];
  (void)sink;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Maps step `s`'s streamed weights in; returns the ms it took.
double populate_step(const EngineState& es, const CpuEngineState& ces, size_t s) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int32_t w : ces.step_streamed[s]) {
    const Tensor& t = es.plan.data.weight_data[w];
    populate(t.data(), t.nbytes());
  }
  return ms_since(t0);
}

}  // namespace

DeviceProfile cpu_profile() {
  DeviceProfile d;
  d.flops_fp32 = 50e9;
  d.flops_half = 10e9;   // converted to float per element
  d.memory_bandwidth = 10e9;
  d.stream_bandwidth = 2e9;  // page cache -> mapped pages
  d.copy_latency_s = 20e-6;
  d.step_overhead_s = 1e-6;
  return d;
}

namespace {

// Two slots: the step that runs and the one mapped ahead. Gather tables are read in place.
ResidencyInput cpu_residency_input(const plan::PlanData& p) {
  ResidencyInput in = residency_input(p, cpu_profile());
  in.slots = 2;
  in.zero_copy = gather_table_weights(p);
  return in;
}

}  // namespace

Status apply_cpu_weight_budget(EngineState& es) {
  auto st = std::make_shared<CpuEngineState>();
  const plan::PlanData& p = es.plan.data;
  const ResidencyInput in = cpu_residency_input(p);
  st->residency = plan_residency(in, es.budget);
  st->step_streamed.resize(p.steps.size());
  st->step_in_place.resize(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    for (int32_t w : in.step_weights[s]) {
      if (st->residency.resident[w]) continue;
      (st->residency.read_in_place[w] ? st->step_in_place : st->step_streamed)[s].push_back(w);
    }
    if (!st->step_streamed[s].empty()) st->streamed_steps.push_back(s);
  }
  st->file_backed = es.plan.file_backed;
  if (!st->file_backed && !st->streamed_steps.empty())
    log_info("engine '" + p.name + "': the plan is held in memory, not mapped from a file: streamed weights " +
             "stay in that memory (load it from a file to bound resident memory)");
  es.device_state = std::move(st);
  return ok_status();
}

ResidencyPlan cpu_residency(const EngineState& es, uint64_t budget) {
  return plan_residency(cpu_residency_input(es.plan.data), budget);
}

MapAheadWorker::~MapAheadWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();  // after the job it runs, if any: no mapping outlives it
}

void MapAheadWorker::post(std::function<double()> job) {
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { loop(); });
    } catch (const std::system_error&) {  // no thread to be had (a limit): map now, on this one
      std::lock_guard<std::mutex> lock(mutex_);
      result_ = job();
      posted_ = done_ = true;
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    posted_ = true;
    done_ = false;
  }
  cv_.notify_all();
}

std::optional<double> MapAheadWorker::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!posted_) return std::nullopt;
  cv_.wait(lock, [&] { return done_; });
  posted_ = false;
  return result_;
}

void MapAheadWorker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || job_ != nullptr; });
    if (stop_) return;
    std::function<double()> job = std::move(job_);
    job_ = nullptr;
    lock.unlock();
    const double r = job();
    lock.lock();
    result_ = r;
    done_ = true;
    cv_.notify_all();
  }
}

CpuStreamer::CpuStreamer(const EngineState& es) : es_(es), ces_(engine_streaming(es)) {}

void CpuStreamer::finish_pending() {
  worker_.wait();
  pending_step_ = SIZE_MAX;
}

void CpuStreamer::begin_run() {
  finish_pending();
  stats_ = StreamingStats{};
  next_ = 0;
  run_start_ = std::chrono::steady_clock::now();
}

void CpuStreamer::before_step(size_t s) {
  if (!ces_ || ces_->step_streamed[s].empty()) return;
  const plan::PlanData& p = es_.plan.data;
  for (int32_t w : ces_->step_streamed[s]) {
    stats_.bytes_streamed += p.weight_data[w].nbytes();
    stats_.weights_streamed++;
  }
  while (next_ < ces_->streamed_steps.size() && ces_->streamed_steps[next_] <= s) ++next_;
  if (!ces_->file_backed) return;  // a plan held in memory: nothing to map
  const auto t0 = std::chrono::steady_clock::now();
  const bool prefetched = pending_step_ == s;
  const std::optional<double> worker_ms = worker_.wait();
  pending_step_ = SIZE_MAX;
  stats_.copy_ms += prefetched && worker_ms ? *worker_ms : populate_step(es_, *ces_, s);
  stats_.stall_ms += ms_since(t0);
  if (next_ >= ces_->streamed_steps.size()) return;
  // The next streamed step's pages: mapped by the worker while this step computes. The one after
  // is read ahead into the page cache.
  const size_t following = ces_->streamed_steps[next_];
  worker_.post([this, following] { return populate_step(es_, *ces_, following); });
  pending_step_ = following;
  if (next_ + 1 < ces_->streamed_steps.size())
    for (int32_t w : ces_->step_streamed[ces_->streamed_steps[next_ + 1]]) {
      const Tensor& t = p.weight_data[w];
      const auto* base = es_.plan.base;
      prefetch_pages(base, es_.plan.file_size, static_cast<const uint8_t*>(t.data()) - base, t.nbytes());
    }
}

void CpuStreamer::after_step(size_t s) {
  if (!ces_ || !ces_->file_backed) return;
  const auto* base = es_.plan.base;
  for (const auto* list : {&ces_->step_streamed[s], &ces_->step_in_place[s]})
    for (int32_t w : *list) {
      const Tensor& t = es_.plan.data.weight_data[w];
      release_pages(base, es_.plan.file_size, static_cast<const uint8_t*>(t.data()) - base, t.nbytes());
    }
}

void CpuStreamer::end_run() {
  finish_pending();  // none after the last streamed step; kept so a run never leaves work behind
  stats_.run_ms = ms_since(run_start_);
}

}  // namespace streamrt::cpu
