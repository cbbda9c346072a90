#include "core/parallel.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

namespace streamrt {

int64_t hardware_threads() {
  static const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  return n;
}

namespace {

// Whether this thread is running a share: a split inside one (a GEMM inside an Attention slice or
// a weight-only column share) runs on it alone, instead of starting threads on cores that the
// outer split already keeps busy.
thread_local bool in_share = false;

struct ShareScope {
  bool outer = in_share;
  ShareScope() { in_share = true; }
  ~ShareScope() { in_share = outer; }
};

}  // namespace

void run_in_shares(int64_t n, int64_t threads, int64_t align, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (in_share) threads = 1;
  align = std::max<int64_t>(1, align);
  threads = std::max<int64_t>(1, threads);
  const int64_t share = ((n + threads - 1) / threads + align - 1) / align * align;
  std::vector<std::thread> pool;
  ShareScope scope;  // the shares this thread runs itself
  for (int64_t j = share; j < n; j += share) {
    const int64_t end = std::min(n, j + share);
    try {
      pool.emplace_back([&fn, j, end] {
        ShareScope scope;
        fn(j, end);
      });
    } catch (const std::system_error&) {
      fn(j, end);
    }
  }
  fn(0, std::min(n, share));
  for (auto& t : pool) t.join();
}

}  // namespace streamrt
