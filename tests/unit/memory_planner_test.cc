#include <gtest/gtest.h>

#include <random>

#include "builder/memory_planner.h"

namespace streamrt::builder {
namespace {

bool overlap(const BufferRequest& a, const BufferRequest& b) { return a.first <= b.last && b.first <= a.last; }

// No two buffers that are alive at the same step may share bytes; all fit the arena.
void expect_valid(const std::vector<BufferRequest>& req, const MemoryPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), req.size());
  for (size_t i = 0; i < req.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kArenaAlignment, 0u);
    EXPECT_LE(plan.offsets[i] + req[i].size, plan.arena_size);
    for (size_t j = i + 1; j < req.size(); ++j) {
      if (!overlap(req[i], req[j]) || !req[i].size || !req[j].size) continue;
      bool disjoint = plan.offsets[i] + req[i].size <= plan.offsets[j] ||
                      plan.offsets[j] + req[j].size <= plan.offsets[i];
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " are alive together and overlap";
    }
  }
}

TEST(MemoryPlanner, ChainReusesMemory) {
  // a -> b -> c -> d: each buffer is dead once the next step consumed it.
  std::vector<BufferRequest> req = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan plan = plan_memory(req);
  expect_valid(req, plan);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_EQ(plan.offsets[1], plan.offsets[3]);
  EXPECT_EQ(plan.arena_size, 2 * 1024u);  // two 64-aligned slots
}

TEST(MemoryPlanner, OverlappingLifetimesGetDisjointRanges) {
  std::vector<BufferRequest> req = {{100, 0, 5}, {200, 1, 5}, {300, 2, 5}};
  MemoryPlan plan = plan_memory(req);
  expect_valid(req, plan);
  EXPECT_GE(plan.arena_size, 600u);
}

TEST(MemoryPlanner, SmallBufferFitsIntoGapOfDeadLargeOne) {
  std::vector<BufferRequest> req = {{4096, 0, 1}, {4096, 0, 4}, {1024, 2, 3}};
  MemoryPlan plan = plan_memory(req);
  expect_valid(req, plan);
  EXPECT_EQ(plan.arena_size, 8192u);
}

TEST(MemoryPlanner, RandomGraphsAreAlwaysValid) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<BufferRequest> req;
    int n = 1 + static_cast<int>(rng() % 40);
    uint64_t naive = 0;
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % 30);
      req.push_back({rng() % 5000, first, first + static_cast<int>(rng() % 6)});
      naive += (req.back().size + 63) / 64 * 64;
    }
    MemoryPlan plan = plan_memory(req);
    expect_valid(req, plan);
    EXPECT_LE(plan.arena_size, std::max<uint64_t>(naive, 64 * req.size()));
  }
}

}  // namespace
}  // namespace streamrt::builder
