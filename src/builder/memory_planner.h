// Activation memory plan: one arena, tensors whose lifetimes do not overlap share bytes.
#pragma once

#include <cstdint>
#include <vector>

namespace streamrt::builder {

struct BufferRequest {
  uint64_t size = 0;   // bytes
  int32_t first = 0;   // step that produces it
  int32_t last = 0;    // last step that reads it (>= first)
  // Index of an earlier request (< this one's) whose bytes this one shares: a view such as a
  // Reshape's output. A view gets its target's offset, and the target's bytes stay reserved
  // until the last step of any view of it (chains too). -1: a buffer of its own. A view must
  // not be larger than its target; an invalid index is treated as -1.
  int32_t alias = -1;
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // parallel to the requests, aligned to kArenaAlignment
  uint64_t arena_size = 0;
};

inline constexpr uint64_t kArenaAlignment = 64;

// Greedy best-fit by decreasing size: each buffer (a view and its targets counting as one,
// alive from the first one's first step to the last one's last) goes to the lowest offset that
// does not collide with an already placed buffer whose lifetime overlaps.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests);

}  // namespace streamrt::builder
