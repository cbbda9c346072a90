#include "backends/cuda/cuda_profiler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace streamrt::cuda {

StepProfiler::StepProfiler() {
  const char* env = std::getenv("STREAMRT_PROFILE");
  enabled_ = env && *env && std::string(env) != "0";
}

StepProfiler::~StepProfiler() {
  if (!enabled_) return;
  collect();
  for (auto& p : pending_) pool_.insert(pool_.end(), {p.a, p.b});
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  if (total_.empty()) return;
  std::vector<std::pair<std::string, std::pair<double, long>>> rows(total_.begin(), total_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
  double sum = 0;
  for (auto& r : rows) sum += r.second.first;
  std::fprintf(stderr, "streamrt profile of '%s' over %d runs (GPU time per run, by op type):\n", name_.c_str(), runs_);
  for (auto& [op, v] : rows)
    std::fprintf(stderr, "  %-24s %10.3f ms  %5.1f%%  %6ld steps\n", op.c_str(), v.first / std::max(runs_, 1),
                 100.0 * v.first / std::max(sum, 1e-9), v.second / std::max(runs_, 1));
  std::fprintf(stderr, "  %-24s %10.3f ms\n", "total", sum / std::max(runs_, 1));
}

void StepProfiler::begin(size_t, cudaStream_t stream) {
  if (!enabled_) return;
  if (pool_.size() < 2) {
    cudaEvent_t a = nullptr, b = nullptr;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    pool_.push_back(a);
    pool_.push_back(b);
  }
  open_ = pool_.back();
  pool_.pop_back();
  cudaEventRecord(open_, stream);
}

void StepProfiler::end(size_t, const std::string& op_type, cudaStream_t stream) {
  if (!enabled_ || !open_) return;
  cudaEvent_t b = pool_.back();
  pool_.pop_back();
  cudaEventRecord(b, stream);
  pending_.push_back({open_, b, op_type});
  open_ = nullptr;
}

void StepProfiler::collect() {
  if (!enabled_ || pending_.empty()) return;
  for (auto& p : pending_) {
    float ms = 0;
    if (cudaEventSynchronize(p.b) == cudaSuccess && cudaEventElapsedTime(&ms, p.a, p.b) == cudaSuccess) {
      auto& t = total_[p.op];
      t.first += ms;
      t.second += 1;
    }
    cudaGetLastError();
    pool_.push_back(p.a);
    pool_.push_back(p.b);
  }
  pending_.clear();
  ++runs_;
}

}  // namespace streamrt::cuda
