// Splitting a loop over columns among short-lived threads (large CPU kernels and weight
// quantization at build time; no pool: a thread costs ~40 us to start).
#pragma once

#include <cstdint>
#include <functional>

namespace streamrt {

// Threads the machine runs at once (at least 1).
int64_t hardware_threads();

// Threads worth starting for `work` units when each thread should get at least `per_thread`
// (a thread's start costs about as much as a few tens of thousands of simple element operations).
inline int64_t threads_for(int64_t work, int64_t per_thread) {
  const int64_t useful = per_thread > 0 ? work / per_thread : 1;
  return useful < 1 ? 1 : (useful < hardware_threads() ? useful : hardware_threads());
}

// Calls fn(begin, end) over consecutive shares of [0, n) on up to `threads` threads, each share a
// multiple of `align` long (the last may be shorter). The calling thread takes the first share, and
// runs any share whose thread cannot be started (a process limit). Returns when all are done.
// Called from inside a share, it runs everything on the calling thread.
void run_in_shares(int64_t n, int64_t threads, int64_t align, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace streamrt
