#include "builder/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace streamrt::builder {

namespace {

uint64_t align_up(uint64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// Places buffers that share no bytes by design.
MemoryPlan place(const std::vector<BufferRequest>& req) {
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

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& req) {
  // Each view joins its target's group (targets come first, so one pass resolves chains); a
  // group is one buffer spanning all of its members' lifetimes.
  std::vector<size_t> root(req.size());
  std::vector<size_t> group_of(req.size());
  std::vector<BufferRequest> groups;
  for (size_t i = 0; i < req.size(); ++i) {
    const int32_t a = req[i].alias;
    const bool view = a >= 0 && static_cast<size_t>(a) < i && req[i].size <= req[static_cast<size_t>(a)].size;
    root[i] = view ? root[static_cast<size_t>(a)] : i;
    if (!view) {
      group_of[i] = groups.size();
      groups.push_back({req[i].size, req[i].first, req[i].last, -1});
      continue;
    }
    BufferRequest& g = groups[group_of[root[i]]];
    g.first = std::min(g.first, req[i].first);
    g.last = std::max(g.last, req[i].last);
  }
  MemoryPlan grouped = place(groups);
  MemoryPlan plan;
  plan.arena_size = grouped.arena_size;
  plan.offsets.resize(req.size());
  for (size_t i = 0; i < req.size(); ++i) plan.offsets[i] = grouped.offsets[group_of[root[i]]];
  return plan;
}

}  // namespace streamrt::builder
