#include "backends/cuda/cuda_profiler.h"

#include <algorithm>
#include <cstdio>

namespace streamrt::cuda {

std::vector<double> StepProfiler::step_means() const {
  std::vector<double> out(per_step_.size(), 0.0);
  for (size_t i = 0; i < per_step_.size(); ++i)
    if (per_step_[i].second) out[i] = per_step_[i].first / static_cast<double>(per_step_[i].second);
  return out;
}

StepProfiler::~StepProfiler() {
  collect();
  for (auto& p : pending_) pool_.insert(pool_.end(), {p.a, p.b});
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  if (!table_ || total_.empty()) return;
  std::vector<std::pair<std::string, std::pair<double, long>>> rows(total_.begin(), total_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
  double sum = 0;
  for (auto& r : rows) sum += r.second.first;
  std::fprintf(stderr, "streamrt profile of '%s' over %d runs after the first (GPU time per run, by op and output dims):\n", name_.c_str(), runs_);
  for (auto& [op, v] : rows)
    std::fprintf(stderr, "  %-40s %10.3f ms  %5.1f%%  %6ld steps\n", op.c_str(), v.first / std::max(runs_, 1),
                 100.0 * v.first / std::max(sum, 1e-9), v.second / std::max(runs_, 1));
  std::fprintf(stderr, "  %-40s %10.3f ms\n", "total", sum / std::max(runs_, 1));
}

void StepProfiler::begin(size_t step, cudaStream_t stream) {
  if (!enabled()) return;
  if (pool_.size() < 2) {
    cudaEvent_t a = nullptr, b = nullptr;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    pool_.push_back(a);
    pool_.push_back(b);
  }
  open_ = pool_.back();
  open_step_ = step;
  pool_.pop_back();
  cudaEventRecord(open_, stream);
}

void StepProfiler::end(size_t, const std::string& op_type, cudaStream_t stream) {
  if (!enabled() || !open_) return;
  cudaEvent_t b = pool_.back();
  pool_.pop_back();
  cudaEventRecord(b, stream);
  pending_.push_back({open_, b, op_type, open_step_});
  open_ = nullptr;
}

void StepProfiler::collect() {
  if (pending_.empty()) return;
  // The first run pays for library initialization: not counted in the table and the means.
  const bool warmup = !seen_first_;
  seen_first_ = true;
  last_.assign(last_.size(), 0.0);
  for (auto& p : pending_) {
    float ms = 0;
    const bool timed = cudaEventSynchronize(p.b) == cudaSuccess && cudaEventElapsedTime(&ms, p.a, p.b) == cudaSuccess;
    if (!timed) cudaGetLastError();
    if (timed) {
      if (last_.size() <= p.step) last_.resize(p.step + 1, 0.0);
      last_[p.step] += ms;
    }
    if (warmup) {
      pool_.push_back(p.a);
      pool_.push_back(p.b);
      continue;
    }
    if (timed) {
      auto& t = total_[p.op];
      t.first += ms;
      t.second += 1;
      if (!step_times_path_.empty()) {
        if (per_step_.size() <= p.step) per_step_.resize(p.step + 1, {0.0, 0});
        per_step_[p.step].first += ms;
        per_step_[p.step].second += 1;
      }
    }
    pool_.push_back(p.a);
    pool_.push_back(p.b);
  }
  pending_.clear();
  if (!warmup) ++runs_;
}

}  // namespace streamrt::cuda
