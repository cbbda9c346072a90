#include "builder/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace streamrt::builder {

namespace {
uint64_t align_up(uint64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& req) {
  MemoryPlan plan;
  plan.offsets.assign(req.size(), 0);
  std::vector<size_t> order(req.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return req[a].size > req[b].size; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const uint64_t size = align_up(std::max<uint64_t>(req[i].size, 1));
    // Intervals occupied by live-overlapping buffers, sorted by offset.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t j : placed)
      if (req[j].first <= req[i].last && req[i].first <= req[j].last)
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + align_up(std::max<uint64_t>(req[j].size, 1)));
    std::sort(busy.begin(), busy.end());
    uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo >= cursor + size && lo - cursor < best_gap) {
        best = cursor;
        best_gap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    plan.offsets[i] = best != UINT64_MAX ? best : cursor;
    plan.arena_size = std::max(plan.arena_size, plan.offsets[i] + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace streamrt::builder
