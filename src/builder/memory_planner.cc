#include "builder/memory_planner.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace streamrt::builder {

namespace {

uint64_t align_up(uint64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// The buffers placed so far, indexed by lifetime: a segment tree over the steps whose nodes hold
// the buffers spanning the node's whole range (each buffer in O(log steps) nodes), with a count per
// subtree so a query skips empty parts. Finding the placed buffers alive at the same time as a new
// one then costs about the number found, not the number placed: scanning every placed buffer made
// a chain of 100 000 steps quadratic.
class LiveIndex {
 public:
  // Steps 0 .. points - 1.
  explicit LiveIndex(int32_t points) : hi_(points - 1), held_(4 * static_cast<size_t>(points)), count_(held_.size()) {}

  void insert(size_t buffer, int32_t first, int32_t last) { insert(1, 0, hi_, buffer, first, last); }
  // Calls f(buffer) for each placed buffer alive at some step of [first, last]; a buffer may come
  // more than once.
  template <typename F>
  void for_each_overlapping(int32_t first, int32_t last, F&& f) const {
    visit(1, 0, hi_, first, last, f);
  }

 private:
  void insert(size_t node, int32_t l, int32_t r, size_t buffer, int32_t first, int32_t last) {
    if (last < l || r < first) return;
    ++count_[node];
    if (first <= l && r <= last) {
      held_[node].push_back(buffer);
      return;
    }
    const int32_t mid = l + (r - l) / 2;
    insert(2 * node, l, mid, buffer, first, last);
    insert(2 * node + 1, mid + 1, r, buffer, first, last);
  }

  template <typename F>
  void visit(size_t node, int32_t l, int32_t r, int32_t first, int32_t last, F& f) const {
    if (last < l || r < first || count_[node] == 0) return;
    for (size_t b : held_[node]) f(b);
    if (l == r) return;
    const int32_t mid = l + (r - l) / 2;
    visit(2 * node, l, mid, first, last, f);
    visit(2 * node + 1, mid + 1, r, first, last, f);
  }

  int32_t hi_;
  std::vector<std::vector<size_t>> held_;
  std::vector<uint32_t> count_;
};

// Lifetimes as [first, max(first, last)] (a request must have last >= first), renumbered onto
// their distinct ends (`*points` of them) so that the index's size follows the number of
// requests, not the step numbers. Renumbering keeps which lifetimes overlap.
std::vector<std::pair<int32_t, int32_t>> lifetimes(const std::vector<BufferRequest>& req, int32_t* points) {
  std::vector<int32_t> ends;
  for (const BufferRequest& r : req) ends.insert(ends.end(), {r.first, std::max(r.first, r.last)});
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  auto rank = [&](int32_t step) {
    return static_cast<int32_t>(std::lower_bound(ends.begin(), ends.end(), step) - ends.begin());
  };
  std::vector<std::pair<int32_t, int32_t>> life(req.size());
  for (size_t i = 0; i < req.size(); ++i) life[i] = {rank(req[i].first), rank(std::max(req[i].first, req[i].last))};
  *points = static_cast<int32_t>(ends.size());
  return life;
}

// Places buffers that share no bytes by design.
MemoryPlan place(const std::vector<BufferRequest>& req) {
  MemoryPlan plan;
  plan.offsets.assign(req.size(), 0);
  if (req.empty()) return plan;
  int32_t points = 0;
  const std::vector<std::pair<int32_t, int32_t>> life = lifetimes(req, &points);
  std::vector<size_t> order(req.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return req[a].size > req[b].size; });
  LiveIndex live(points);
  std::vector<size_t> seen_by(req.size(), SIZE_MAX);  // dedups a query's answers
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (size_t i : order) {
    const uint64_t size = align_up(std::max<uint64_t>(req[i].size, 1));
    // Intervals occupied by live-overlapping buffers, sorted by offset.
    busy.clear();
    live.for_each_overlapping(life[i].first, life[i].second, [&](size_t j) {
      if (seen_by[j] == i) return;
      seen_by[j] = i;
      busy.emplace_back(plan.offsets[j], plan.offsets[j] + align_up(std::max<uint64_t>(req[j].size, 1)));
    });
    std::sort(busy.begin(), busy.end());
    uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
    for (const auto& [lo_off, hi_off] : busy) {
      if (lo_off >= cursor + size && lo_off - cursor < best_gap) {
        best = cursor;
        best_gap = lo_off - cursor;
      }
      cursor = std::max(cursor, hi_off);
    }
    plan.offsets[i] = best != UINT64_MAX ? best : cursor;
    plan.arena_size = std::max(plan.arena_size, plan.offsets[i] + size);
    live.insert(i, life[i].first, life[i].second);
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
